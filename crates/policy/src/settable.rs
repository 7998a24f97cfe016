//! `settable!`: a configuration struct whose fields stay public to read and to assign,
//! with a chainable setter per field (`Limits::default().fuel(1_000).timeout(d)`), so
//! dependents build values from `Default` (or a deny-by-default constructor) instead of
//! struct literals, and a field can be added without breaking them (with
//! `#[non_exhaustive]` on the struct).
//!
//! Exported (hidden) for `toolhost-runtime`, whose configuration structs follow the same
//! pattern: one macro for both crates rather than a copy in each.

/// Declares `pub struct NAME { pub FIELD: TYPE, … }` as written, plus
/// `pub fn FIELD(self, value: TYPE) -> Self` for each field.
#[doc(hidden)]
#[macro_export]
macro_rules! settable {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty ),*
        }

        impl $name {
            $(
                #[doc = concat!("Sets the `", stringify!($field), "` field.")]
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
