//! Splits a qmgr line into words, operators, commas and quoted strings.
//! `+=` and `-=` are operators only when written together; a `-` or `+`
//! elsewhere is part of a word (`c1-prod`). `#` starts a comment. Brackets
//! keep what they hold in the word, `=` and `,` included: PBS's limits
//! are written `max_run = [u:PBS_GENERIC=5]`.

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Word(String),
    /// A quoted string: a value, never a keyword.
    Quoted(String),
    Assign,
    Add,
    Remove,
    Comma,
}

impl Token {
    /// How the token reads in an error message.
    pub fn show(&self) -> String {
        match self {
            Token::Word(w) => format!("\"{w}\""),
            Token::Quoted(q) => format!("'\"{q}\"'"),
            Token::Assign => "\"=\"".into(),
            Token::Add => "\"+=\"".into(),
            Token::Remove => "\"-=\"".into(),
            Token::Comma => "\",\"".into(),
        }
    }
}

pub fn tokens(line: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => break,
            ',' => {
                chars.next();
                out.push(Token::Comma);
            }
            '=' => {
                chars.next();
                out.push(Token::Assign);
            }
            '"' | '\'' => {
                chars.next();
                let mut text = String::new();
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(other) => text.push(other),
                        None => return Err(format!("the quote {c} is never closed")),
                    }
                }
                out.push(Token::Quoted(text));
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c == '[' {
                        for inner in chars.by_ref() {
                            word.push(inner);
                            if inner == ']' {
                                break;
                            }
                        }
                        continue;
                    }
                    if c.is_whitespace() || matches!(c, ',' | '=' | '"' | '\'' | '#') {
                        break;
                    }
                    if matches!(c, '+' | '-') {
                        let mut ahead = chars.clone();
                        ahead.next();
                        if ahead.peek() == Some(&'=') {
                            break;
                        }
                    }
                    word.push(c);
                    chars.next();
                }
                if word.is_empty() {
                    // A lone `+=` or `-=`.
                    let op = chars.next();
                    chars.next();
                    out.push(if op == Some('+') {
                        Token::Add
                    } else {
                        Token::Remove
                    });
                } else {
                    out.push(Token::Word(word));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Token::*;

    fn w(s: &str) -> Token {
        Word(s.into())
    }

    #[test]
    fn splits_words_operators_and_quotes() {
        assert_eq!(
            tokens("set queue c1-prod priority=10,enabled = true # why").unwrap(),
            vec![
                w("set"),
                w("queue"),
                w("c1-prod"),
                w("priority"),
                Assign,
                w("10"),
                Comma,
                w("enabled"),
                Assign,
                w("true")
            ]
        );
        assert_eq!(
            tokens("s s managers+=bob@*").unwrap(),
            vec![w("s"), w("s"), w("managers"), Add, w("bob@*")]
        );
        assert_eq!(
            tokens("set server managers -= \"a@*,b@*\"").unwrap(),
            vec![
                w("set"),
                w("server"),
                w("managers"),
                Remove,
                Quoted("a@*,b@*".into())
            ]
        );
        assert_eq!(
            tokens("priority = -5").unwrap(),
            vec![w("priority"), Assign, w("-5")]
        );
        assert!(tokens("set server x = \"open").is_err());
        assert_eq!(
            tokens("max_run = [u:PBS_GENERIC=5],[g:a,b=2]").unwrap(),
            vec![
                w("max_run"),
                Assign,
                w("[u:PBS_GENERIC=5]"),
                Comma,
                w("[g:a,b=2]")
            ]
        );
    }
}
