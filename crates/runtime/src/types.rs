//! [`WitType`]: the host's own copy of a component value type.
//!
//! wasmtime's `component::types::Type` can only be obtained from a loaded component. Copying
//! it once at load time into a plain tree lets the JSON converter and the schema generator
//! run without the engine, lets tests build types directly (property tests generate them),
//! and rejects what JSON cannot carry (resources, futures, streams) before any call.

use wasmtime::component::types::Type;

/// A component-model value type that can cross the JSON boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum WitType {
    Bool,
    S8,
    U8,
    S16,
    U16,
    S32,
    U32,
    S64,
    U64,
    F32,
    F64,
    Char,
    String,
    List(Box<WitType>),
    FixedList(Box<WitType>, u32),
    Map(Box<WitType>, Box<WitType>),
    Record(Vec<(String, WitType)>),
    Tuple(Vec<WitType>),
    Variant(Vec<(String, Option<WitType>)>),
    Enum(Vec<String>),
    Option(Box<WitType>),
    Result {
        ok: Option<Box<WitType>>,
        err: Option<Box<WitType>>,
    },
    Flags(Vec<String>),
}

/// A type that has no JSON form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what} cannot be passed as JSON")]
pub(crate) struct Unsupported {
    pub what: &'static str,
}

impl WitType {
    /// Copies a wasmtime type, refusing resources, futures, streams and error contexts.
    pub(crate) fn from_wasmtime(ty: &Type) -> Result<WitType, Unsupported> {
        let boxed = |t: &Type| WitType::from_wasmtime(t).map(Box::new);
        Ok(match ty {
            Type::Bool => WitType::Bool,
            Type::S8 => WitType::S8,
            Type::U8 => WitType::U8,
            Type::S16 => WitType::S16,
            Type::U16 => WitType::U16,
            Type::S32 => WitType::S32,
            Type::U32 => WitType::U32,
            Type::S64 => WitType::S64,
            Type::U64 => WitType::U64,
            Type::Float32 => WitType::F32,
            Type::Float64 => WitType::F64,
            Type::Char => WitType::Char,
            Type::String => WitType::String,
            Type::List(l) => WitType::List(boxed(&l.ty())?),
            Type::FixedLengthList(l) => WitType::FixedList(boxed(&l.ty())?, l.len()),
            Type::Map(m) => WitType::Map(boxed(&m.key())?, boxed(&m.value())?),
            Type::Record(r) => WitType::Record(
                r.fields()
                    .map(|f| Ok((f.name.to_string(), WitType::from_wasmtime(&f.ty)?)))
                    .collect::<Result<_, _>>()?,
            ),
            Type::Tuple(t) => WitType::Tuple(
                t.types()
                    .map(|t| WitType::from_wasmtime(&t))
                    .collect::<Result<_, _>>()?,
            ),
            Type::Variant(v) => WitType::Variant(
                v.cases()
                    .map(|c| {
                        let payload = c.ty.as_ref().map(WitType::from_wasmtime).transpose()?;
                        Ok((c.name.to_string(), payload))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Type::Enum(e) => WitType::Enum(e.names().map(str::to_string).collect()),
            Type::Option(o) => WitType::Option(boxed(&o.ty())?),
            Type::Result(r) => WitType::Result {
                ok: r.ok().as_ref().map(boxed).transpose()?,
                err: r.err().as_ref().map(boxed).transpose()?,
            },
            Type::Flags(f) => WitType::Flags(f.names().map(str::to_string).collect()),
            Type::Own(_) | Type::Borrow(_) => return Err(Unsupported { what: "a resource" }),
            Type::Future(_) => return Err(Unsupported { what: "a future" }),
            Type::Stream(_) => return Err(Unsupported { what: "a stream" }),
            Type::ErrorContext => {
                return Err(Unsupported {
                    what: "an error-context",
                });
            }
        })
    }

    /// The WIT spelling of the type, for error messages.
    pub fn wit_name(&self) -> String {
        match self {
            WitType::Bool => "bool".into(),
            WitType::S8 => "s8".into(),
            WitType::U8 => "u8".into(),
            WitType::S16 => "s16".into(),
            WitType::U16 => "u16".into(),
            WitType::S32 => "s32".into(),
            WitType::U32 => "u32".into(),
            WitType::S64 => "s64".into(),
            WitType::U64 => "u64".into(),
            WitType::F32 => "f32".into(),
            WitType::F64 => "f64".into(),
            WitType::Char => "char".into(),
            WitType::String => "string".into(),
            WitType::List(t) => format!("list<{}>", t.wit_name()),
            WitType::FixedList(t, n) => format!("list<{}, {n}>", t.wit_name()),
            WitType::Map(k, v) => format!("map<{}, {}>", k.wit_name(), v.wit_name()),
            WitType::Record(_) => "record".into(),
            WitType::Tuple(ts) => format!(
                "tuple<{}>",
                ts.iter()
                    .map(WitType::wit_name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            WitType::Variant(_) => "variant".into(),
            WitType::Enum(_) => "enum".into(),
            WitType::Option(t) => format!("option<{}>", t.wit_name()),
            WitType::Result { ok, err } => {
                let side =
                    |t: &Option<Box<WitType>>| t.as_ref().map_or("_".into(), |t| t.wit_name());
                format!("result<{}, {}>", side(ok), side(err))
            }
            WitType::Flags(_) => "flags".into(),
        }
    }

    /// Inclusive range of an integer type, as `i128` so every WIT integer fits.
    pub(crate) fn int_range(&self) -> Option<(i128, i128)> {
        Some(match self {
            WitType::S8 => (i8::MIN.into(), i8::MAX.into()),
            WitType::U8 => (0, u8::MAX.into()),
            WitType::S16 => (i16::MIN.into(), i16::MAX.into()),
            WitType::U16 => (0, u16::MAX.into()),
            WitType::S32 => (i32::MIN.into(), i32::MAX.into()),
            WitType::U32 => (0, u32::MAX.into()),
            WitType::S64 => (i64::MIN.into(), i64::MAX.into()),
            WitType::U64 => (0, u64::MAX.into()),
            _ => return None,
        })
    }
}
