//! The `tool!` macro behind `toolhost_sdk::tool!`.
//!
//! It does two things at compile time: generates the component bindings for the tool's world
//! (through `wit_bindgen::generate!`, re-exported by the SDK) and embeds the world's WIT doc
//! comments as a [`toolhost_wit_docs::SECTION`] custom section, so the built `.wasm` file
//! describes itself to `toolhost tool inspect` with no extra packing step.

use std::path::PathBuf;

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token};

/// Generates bindings for a tool's WIT world and embeds its docs.
///
/// ```text
/// toolhost_sdk::tool!();                                  // ./wit, its only world
/// toolhost_sdk::tool!(path = "wit", world = "calc");      // both optional
/// ```
#[proc_macro]
pub fn tool(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as Args);
    match expand(args) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

struct Args {
    path: Option<LitStr>,
    world: Option<LitStr>,
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = Args {
            path: None,
            world: None,
        };
        while !input.is_empty() {
            let key: syn::Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse()?;
            let slot = match key.to_string().as_str() {
                "path" => &mut args.path,
                "world" => &mut args.world,
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown option `{other}`: expected `path` or `world`"),
                    ));
                }
            };
            if slot.replace(value).is_some() {
                return Err(syn::Error::new(key.span(), format!("`{key}` given twice")));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

fn expand(args: Args) -> syn::Result<proc_macro2::TokenStream> {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")
        .map_err(|_| syn::Error::new(Span::call_site(), "CARGO_MANIFEST_DIR is not set"))?;
    let (rel, path_span) = match &args.path {
        Some(lit) => (lit.value(), lit.span()),
        None => ("wit".to_string(), Span::call_site()),
    };
    let path = PathBuf::from(manifest_dir).join(&rel);
    if !path.exists() {
        return Err(syn::Error::new(
            path_span,
            format!(
                "WIT path `{}` does not exist: put the tool's WIT in `wit/` or pass `path = \"...\"`",
                path.display()
            ),
        ));
    }
    let world_arg = args.world.as_ref().map(LitStr::value);
    let docs =
        toolhost_wit_docs::DocMap::from_wit_path(&path, world_arg.as_deref()).map_err(|e| {
            let span = args.world.as_ref().map_or(path_span, |w| w.span());
            syn::Error::new(span, e.to_string())
        })?;
    let path_str = path.display().to_string();
    let world = &docs.world;
    let bytes = docs.to_json();
    let len = bytes.len();
    let section = toolhost_wit_docs::SECTION;
    Ok(quote! {
        ::toolhost_sdk::wit_bindgen::generate!({
            path: #path_str,
            world: #world,
            runtime_path: "::toolhost_sdk::wit_bindgen::rt",
            bitflags_path: "::toolhost_sdk::wit_bindgen::rt::bitflags",
            generate_all,
        });

        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        #[unsafe(link_section = #section)]
        #[used]
        static __TOOLHOST_DOCS: [u8; #len] = [#(#bytes),*];
    })
}
