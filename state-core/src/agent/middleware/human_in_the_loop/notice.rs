//! The note put before the answer of a call a reviewer edited, telling the
//! model which call ran instead of its own (LangChain's edit notice).

use serde_json::{json, Value};

use super::request::Action;
use crate::agent::tool::{OutputKind, ToolOutput};
use crate::message::Content;
use crate::pyrepr::json_dumps_ascii;
use crate::AgentState;

/// LangChain's default edit notice.
pub(crate) const DEFAULT_NOTICE: &str = "Note: a human reviewer replaced this tool call before \
     it ran. The call recorded in your message is the one you produced, not the one that \
     executed. This was intentional and authorized. Do not re-issue your original call.";

/// `output` with the notice before its answer, naming the call that ran
/// (`executed`). An update without an answer of its own is left as it is.
pub(crate) fn annotate<S: AgentState>(
    mut output: ToolOutput<S>,
    notice: &str,
    executed: &Action,
) -> ToolOutput<S> {
    match &mut output.kind {
        OutputKind::Answer(message) => {
            message.content = prepend(&message.content, notice, executed);
        }
        OutputKind::Update {
            answer: Some(content),
            ..
        } => *content = prepend(content, notice, executed),
        OutputKind::Update { answer: None, .. } => {}
    }
    output
}

/// `output`'s tool message named after the tool that ran (`name`), when
/// the tool left it unnamed, as LangChain names the answer of an edited
/// call.
pub(crate) fn named<S: AgentState>(mut output: ToolOutput<S>, name: &str) -> ToolOutput<S> {
    if let OutputKind::Answer(message) = &mut output.kind {
        message.name.get_or_insert_with(|| name.to_owned());
    }
    output
}

/// The notice's text: `notice`, the call that ran, and a lead-in to the
/// tool's answer when there is one.
fn text(notice: &str, executed: &Action, has_content: bool) -> String {
    let args = json_dumps_ascii(&Value::Object(executed.args.clone()));
    let text = format!(
        "{notice} Executed instead: {} with arguments {args}.",
        executed.name
    );
    if has_content {
        format!("{text}\n\nTool response:")
    } else {
        text
    }
}

/// `content` with the notice first (once: content that already has it is
/// kept), as a line of text or, among blocks, a block of the same shape.
fn prepend(content: &Content, notice: &str, executed: &Action) -> Content {
    match content {
        Content::Text(body) => {
            let lead = text(notice, executed, !body.is_empty());
            if body.contains(&lead) {
                return content.clone();
            }
            let separator = if body.is_empty() { "" } else { "\n" };
            Content::Text(format!("{lead}{separator}{body}"))
        }
        Content::Blocks(blocks) => {
            let lead = text(notice, executed, !blocks.is_empty());
            if blocks.iter().any(|b| b.to_string().contains(&lead)) {
                return content.clone();
            }
            let all_strings = !blocks.is_empty() && blocks.iter().all(Value::is_string);
            let first = if all_strings {
                Value::String(lead)
            } else {
                json!({"type": "text", "text": lead})
            };
            Content::Blocks(
                std::iter::once(first)
                    .chain(blocks.iter().cloned())
                    .collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_written_as_python_dumps_it() {
        let value = json!({"b": [1, "é"], "a": {"x": null}});
        assert_eq!(
            json_dumps_ascii(&value),
            r#"{"a": {"x": null}, "b": [1, "\u00e9"]}"#
        );
    }

    #[test]
    fn the_notice_goes_first_once() {
        let executed = Action {
            name: "t".into(),
            args: json!({"a": 1}).as_object().unwrap().clone(),
        };
        let once = prepend(&Content::Text("ok".into()), "Note.", &executed);
        let Content::Text(text) = &once else {
            panic!("text expected")
        };
        assert_eq!(
            text,
            "Note. Executed instead: t with arguments {\"a\": 1}.\n\nTool response:\nok"
        );
        assert_eq!(prepend(&once, "Note.", &executed), once);
        let empty = prepend(&Content::Text(String::new()), "Note.", &executed);
        assert_eq!(
            empty,
            Content::Text("Note. Executed instead: t with arguments {\"a\": 1}.".into())
        );
        let blocks = prepend(&Content::Blocks(vec![json!("x")]), "N.", &executed);
        let Content::Blocks(blocks) = blocks else {
            panic!("blocks expected")
        };
        assert_eq!(
            blocks[0],
            json!("N. Executed instead: t with arguments {\"a\": 1}.\n\nTool response:")
        );
    }
}
