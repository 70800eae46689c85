use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct Foo {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(immutable)]
    pub topic: String,
}

fn main() {
    let _update = FooUpdate::new().topic("x");
}
