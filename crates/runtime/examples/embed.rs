//! Embedding toolhost-runtime alone: load a component, call it under an operator's policy.
//! `cargo run -p toolhost-runtime --example embed -- TOOL.wasm POLICY.toml OPERATION JSON`
use std::path::Path;

use toolhost_runtime::{Gate, Policy, Runtime, RuntimeConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let [wasm, policy, operation, json] = argv.as_slice() else {
        return Err("usage: embed TOOL.wasm POLICY.toml OPERATION JSON".into());
    };
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let tool = runtime.load(Path::new(wasm))?;
    let policy = Policy::load(Path::new(policy))?;
    let section = (policy.section_for(Path::new(wasm))).ok_or("no policy section for the tool")?;
    let args = serde_json::from_str(json)?;
    let outcome = Gate::new()
        .call(&runtime, section, &tool, operation, &args, &section.limits)
        .await;
    println!("{}", outcome.result?);
    Ok(())
}
