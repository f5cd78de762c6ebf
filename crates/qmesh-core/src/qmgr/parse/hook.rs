//! The hook object's grammar (PBS Pro's):
//!
//! ```text
//! create|delete|set|unset|list|print hook NAME [attr = value, ...]
//! import hook NAME CONTENT_TYPE ENCODING "BASE64"    (qmgr's client reads FILE)
//! import hook NAME CONTENT_TYPE ENCODING -           (the content on the lines
//!                                                     that follow, to a blank line)
//! export hook NAME CONTENT_TYPE ENCODING
//! ```
//!
//! `print hook` writes the `-` form with base64, as PBS does, so a saved
//! `print server` reads back through `parse_script` alone.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::super::lex::Token;
use super::super::vocab::{Action, HookAction};
use super::Parser;

/// The encodings `import`/`export hook` take.
const ENCODINGS: &str = "default or base64";

impl Parser {
    pub(super) fn hook_command(&mut self, verb: &str) -> Result<Action, String> {
        let names = self.names_or_active("hook")?;
        if names.is_empty() && !matches!(verb, "l" | "list" | "p" | "print") {
            return Err("name the hook: create hook NAME".into());
        }
        Ok(Action::Hook(match verb {
            "c" | "create" => HookAction::Create(names, self.assignments()?),
            "d" | "delete" => HookAction::Delete(names),
            "s" | "set" => {
                let attrs = self.assignments()?;
                if attrs.is_empty() {
                    return Err("name the attributes to set: set hook NAME event = queuejob".into());
                }
                HookAction::Set(names, attrs)
            }
            "u" | "unset" => HookAction::Unset(names, self.attribute_names()?),
            "l" | "list" => HookAction::List(names),
            _ => HookAction::Print(names),
        }))
    }

    /// `import hook NAME TYPE ENCODING DATA` and `export hook NAME TYPE
    /// ENCODING`; `import` of `-` is read by [`stdin_import`] before.
    pub(super) fn import_export(&mut self, verb: &str) -> Result<Action, String> {
        let object = self.word("hook")?.to_ascii_lowercase();
        if !matches!(object.as_str(), "hook" | "hooks") {
            return Err(format!(
                "{verb} {object}: qmgr imports and exports hooks (and, in the client, \
                 holidays): {verb} hook NAME application/x-python default FILE"
            ));
        }
        let name = self.word("the hook's name")?;
        let content_type = self.word("a content type (application/x-python)")?;
        let encoding = self.word(&format!("an encoding ({ENCODINGS})"))?;
        let base64 = encoding_is_base64(&encoding)?;
        if verb == "export" {
            if let Some(Token::Word(file)) = self.peek(0) {
                return Err(format!(
                    "export hook {name} ... {file}: the file is written by qmgr's client \
                     when it is the only command; here, leave the file out and the content \
                     is printed"
                ));
            }
            return Ok(Action::Hook(HookAction::Export {
                name,
                content_type,
                base64,
            }));
        }
        let content = match self.next() {
            Some(Token::Quoted(data)) if base64 => decode(&data)?,
            Some(Token::Word(file)) | Some(Token::Quoted(file)) => {
                return Err(format!(
                    "import hook {name}: the file \"{file}\" is read by qmgr's client, \
                     where it is; this request carried its name only"
                ));
            }
            _ => return Err(format!("import hook {name}: name the file to import")),
        };
        Ok(Action::Hook(HookAction::Import {
            name,
            content_type,
            content,
        }))
    }
}

fn encoding_is_base64(encoding: &str) -> Result<bool, String> {
    match encoding.to_ascii_lowercase().as_str() {
        "default" => Ok(false),
        "base64" => Ok(true),
        other => Err(format!("unknown encoding \"{other}\"; write {ENCODINGS}")),
    }
}

fn decode(data: &str) -> Result<Vec<u8>, String> {
    let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD
        .decode(clean)
        .map_err(|e| format!("the hook's content is not base64: {e}"))
}

/// `import hook NAME TYPE ENCODING -`: the line's words, when it is one.
pub(super) fn stdin_import(line: &str) -> Option<(String, String, String)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words[..] {
        [verb, object, name, content_type, encoding, "-"]
            if verb.eq_ignore_ascii_case("import")
                && matches!(object.to_ascii_lowercase().as_str(), "hook" | "hooks") =>
        {
            Some((name.into(), content_type.into(), encoding.into()))
        }
        _ => None,
    }
}

/// The content of a `-` import: `lines` (up to a blank line), base64.
pub(super) fn stdin_content(lines: &[&str], encoding: &str) -> Result<Vec<u8>, String> {
    if encoding_is_base64(encoding)? {
        decode(&lines.concat())
    } else {
        Err(
            "a hook's content after \"-\" is read as base64 (a script may hold blank \
             lines): write import hook NAME TYPE base64 -, or name a file"
                .into(),
        )
    }
}
