toolhost_sdk::tool!(); // bindings for ./wit, plus its doc comments embedded in the .wasm

struct Tool;

impl Guest for Tool {
    fn greet(name: String, times: u8) -> Result<String, String> {
        if name.is_empty() {
            return Err("`name` is empty: say who to greet".into());
        }
        if !(1..=10).contains(&times) {
            return Err(format!("`times` is {times}: give 1 to 10"));
        }
        toolhost_sdk::log::info(&format!("greeting {name}"));
        Ok(vec![format!("Hello, {name}!"); times.into()].join(" "))
    }
}

export!(Tool);
