//! Slurm's `%` format specifications as squeue and sinfo read them:
//! `%[.][-][#]WIDTH` and a letter between text, `%%` a percent sign.
//! Each command checks the letters against its own fields.

/// One piece of a format as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    Text(String),
    Field {
        letter: char,
        /// The digits after `%`, when there are any.
        width: Option<usize>,
        /// `.`: right-justified.
        right: bool,
        /// `#`: as wide as the longest value (sinfo's default formats).
        longest: bool,
    },
}

/// Reads a format into text and fields; the error says where it ends
/// unfinished.
pub fn specs(format: &str) -> Result<Vec<Spec>, String> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        let right = chars.next_if_eq(&'.').is_some();
        let _left = chars.next_if_eq(&'-').is_some();
        let longest = chars.next_if_eq(&'#').is_some();
        let mut digits = String::new();
        while let Some(d) = chars.next_if(|d| d.is_ascii_digit()) {
            digits.push(d);
        }
        let Some(letter) = chars.next() else {
            return Err(format!("--format \"{format}\" ends with an unfinished %"));
        };
        if letter == '%' {
            text.push('%');
            continue;
        }
        if !text.is_empty() {
            out.push(Spec::Text(std::mem::take(&mut text)));
        }
        out.push(Spec::Field {
            letter,
            width: digits.parse().ok(),
            right,
            longest,
        });
    }
    if !text.is_empty() {
        out.push(Spec::Text(text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_widths_and_text() {
        assert_eq!(
            specs("%.18i|%-6j%%%#P").unwrap(),
            [
                Spec::Field {
                    letter: 'i',
                    width: Some(18),
                    right: true,
                    longest: false
                },
                Spec::Text("|".into()),
                Spec::Field {
                    letter: 'j',
                    width: Some(6),
                    right: false,
                    longest: false
                },
                Spec::Text("%".into()),
                Spec::Field {
                    letter: 'P',
                    width: None,
                    right: false,
                    longest: true
                },
            ]
        );
        assert!(specs("%.1").unwrap_err().ends_with("unfinished %"));
    }
}
