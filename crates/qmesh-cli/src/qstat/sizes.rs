//! Memory sizes in the narrow columns of `qstat -a` and `qstat -q`, as PBS
//! writes them: the unit the value came in (`954mb`), in megawords with
//! `-M` (`120mw`, a word is 8 bytes) or gigabytes with `-G` (`1gb`),
//! rounded up, and moved to a larger unit until the number has at most
//! four digits.

/// The unit `-G` or `-M` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SizeUnit {
    /// As the value was given.
    #[default]
    AsGiven,
    /// `-G`: gigabytes.
    Gigabytes,
    /// `-M`: megawords.
    Megawords,
}

const PREFIXES: [char; 7] = [' ', 'k', 'm', 'g', 't', 'p', '?'];

/// `value` (PBS's size form: `1048576kb`, `4gb`, `100`, `12mw`) in `unit`.
pub fn size(value: &str, unit: SizeUnit) -> String {
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    let rest = &value[digits.len()..];
    let mut n: u128 = digits.parse().unwrap_or(0);
    let mut chars = rest.chars();
    let first = chars.next();
    let given = match first {
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        _ => 0,
    };
    let in_words = first == Some('w') || chars.next() == Some('w');
    let mut word_suffix = in_words;
    if in_words {
        n <<= 3;
    }
    let mut shown = match unit {
        SizeUnit::AsGiven => given,
        SizeUnit::Megawords => {
            word_suffix = true;
            2
        }
        SizeUnit::Gigabytes => {
            word_suffix = false;
            3
        }
    };
    let shift = 10 * (given as i32 - shown as i32);
    if shift < 0 {
        let bits = (-shift) as u32;
        n = n.div_ceil(1 << bits);
    } else {
        n <<= shift as u32;
    }
    if word_suffix {
        n = (n + 7) >> 3;
    }
    while n > 9999 {
        n = (n + 1023) >> 10;
        shown += 1;
    }
    let prefix = PREFIXES[shown.min(PREFIXES.len() - 1)];
    let suffix = if word_suffix { 'w' } else { 'b' };
    format!("{n}{prefix}{suffix}")
}

/// Bytes in PBS's size form, in kilobytes as PBS keeps memory (`4194304kb`).
pub fn kilobytes(bytes: u64) -> String {
    format!("{}kb", bytes.div_ceil(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_keep_their_unit_within_four_digits() {
        assert_eq!(size("954mb", SizeUnit::AsGiven), "954mb");
        assert_eq!(size("4194304kb", SizeUnit::AsGiven), "4096mb");
        assert_eq!(size("16777216kb", SizeUnit::AsGiven), "16gb");
        assert_eq!(size("10gb", SizeUnit::AsGiven), "10gb");
    }

    #[test]
    fn dash_g_and_dash_m_convert_and_round_up() {
        assert_eq!(size("954mb", SizeUnit::Gigabytes), "1gb");
        assert_eq!(size("4194304kb", SizeUnit::Gigabytes), "4gb");
        assert_eq!(size("1gb", SizeUnit::Megawords), "128mw");
        assert_eq!(size("1mb", SizeUnit::Megawords), "1mw");
    }

    #[test]
    fn kilobytes_round_up() {
        assert_eq!(kilobytes(4 << 30), "4194304kb");
        assert_eq!(kilobytes(1000), "1kb");
    }
}
