//! Named periods (EPCC's DAY, NIGHT, WEEKEND): a list of spans, and whether
//! holidays close the period. EPCC ran no DAY configuration on a public
//! holiday; a NIGHT or a WEEKEND runs whatever the date, so holidays leave a
//! period alone unless it says `holidays_off`.
//!
//! In TOML a period is its list of spans, or a table when it has the flag:
//! `DAY = { spans = ["Mon-Fri 10:00-18:00"], holidays_off = true }`.
//! As one line of text (for qmgr): `Mon-Fri 10:00-18:00; holidays_off`,
//! spans separated by `;`, and `never` for a period without spans.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{CalendarError, Span};

/// The periods every calendar has; a named period may not take these names.
pub const BUILT_IN: [&str; 3] = [ALWAYS, PRIME, NON_PRIME];
pub const ALWAYS: &str = "always";
pub const PRIME: &str = "prime";
pub const NON_PRIME: &str = "non_prime";

const HOLIDAYS_OFF: &str = "holidays_off";
const NEVER: &str = "never";

/// A named period: active while any of its spans is, except on holidays
/// when `holidays_off` is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Period {
    pub spans: Vec<Span>,
    pub holidays_off: bool,
}

impl Period {
    pub fn new(spans: Vec<Span>) -> Period {
        Period {
            spans,
            holidays_off: false,
        }
    }
}

/// A period's name: letters, digits, `_` and `-`, not a built-in name.
/// Names are case-sensitive.
pub fn check_name(name: &str) -> Result<(), CalendarError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || !name.chars().all(fine) {
        return Err(CalendarError::BadPeriodName {
            name: name.to_string(),
        });
    }
    if BUILT_IN.contains(&name) {
        return Err(CalendarError::BuiltInPeriod {
            name: name.to_string(),
        });
    }
    Ok(())
}

impl FromStr for Period {
    type Err = CalendarError;

    fn from_str(text: &str) -> Result<Period, CalendarError> {
        let mut period = Period::default();
        let mut never = false;
        for part in text.split(';').map(str::trim) {
            if part.eq_ignore_ascii_case(HOLIDAYS_OFF) {
                period.holidays_off = true;
            } else if part.eq_ignore_ascii_case(NEVER) {
                never = true;
            } else if !part.is_empty() || text.trim().is_empty() {
                period.spans.push(part.parse().map_err(|e| match e {
                    CalendarError::BadSpan { why, .. } => CalendarError::BadPeriod {
                        text: text.to_string(),
                        why: format!("span \"{part}\": {why}"),
                    },
                    other => other,
                })?);
            }
        }
        if never && !period.spans.is_empty() {
            return Err(CalendarError::BadPeriod {
                text: text.to_string(),
                why: "it says never and gives spans".into(),
            });
        }
        if !never && period.spans.is_empty() {
            return Err(CalendarError::BadPeriod {
                text: text.to_string(),
                why: "it gives no spans (write never for a period that is never active)".into(),
            });
        }
        Ok(period)
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.spans.is_empty() {
            f.write_str(NEVER)?;
        }
        for (i, span) in self.spans.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{span}")?;
        }
        if self.holidays_off {
            write!(f, "; {HOLIDAYS_OFF}")?;
        }
        Ok(())
    }
}

/// The table form, for periods that set the flag.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeriodTable {
    spans: Vec<Span>,
    #[serde(default)]
    holidays_off: bool,
}

impl Serialize for Period {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.holidays_off {
            PeriodTable {
                spans: self.spans.clone(),
                holidays_off: true,
            }
            .serialize(serializer)
        } else {
            self.spans.serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Period, D::Error> {
        struct PeriodVisitor;

        impl<'de> Visitor<'de> for PeriodVisitor {
            type Value = Period;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a list of spans such as [\"Mon-Fri 10:00-18:00\"], or a table \
                     { spans = [...], holidays_off = true }",
                )
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Period, A::Error> {
                let mut spans = Vec::new();
                while let Some(span) = seq.next_element::<Span>()? {
                    spans.push(span);
                }
                Ok(Period::new(spans))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Period, A::Error> {
                let table = PeriodTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Period {
                    spans: table.spans,
                    holidays_off: table.holidays_off,
                })
            }
        }

        deserializer.deserialize_any(PeriodVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        for text in [
            "Mon-Fri 10:00-18:00",
            "Fri 18:00-24:00; Sat-Sun; Mon 00:00-10:00",
            "Mon-Fri 10:00-18:00; holidays_off",
            "never",
            "never; holidays_off",
        ] {
            let p: Period = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
        let p: Period = "mon-fri 10:00-18:00 ;HOLIDAYS_OFF".parse().unwrap();
        assert!(p.holidays_off);
        assert_eq!(p.to_string(), "Mon-Fri 10:00-18:00; holidays_off");
    }

    #[test]
    fn bad_periods_name_the_text() {
        for (text, part) in [
            ("", "names no days"),
            ("holidays_off", "gives no spans"),
            ("never; Mon", "says never and gives spans"),
            (
                "Mon-Fri 10:00-18:00; Sun 25:00-26:00",
                "span \"Sun 25:00-26:00\"",
            ),
        ] {
            let err = text.parse::<Period>().unwrap_err().to_string();
            assert!(err.contains(part), "{text:?}: {err}");
        }
    }

    #[test]
    fn names() {
        for good in ["DAY", "night_2", "WEEK-END", "Prime"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "day time", "nuit🌙", "a.b"] {
            assert!(
                matches!(check_name(bad), Err(CalendarError::BadPeriodName { .. })),
                "{bad}"
            );
        }
        for built_in in BUILT_IN {
            assert!(matches!(
                check_name(built_in),
                Err(CalendarError::BuiltInPeriod { .. })
            ));
        }
    }

    #[test]
    fn json_forms() {
        let plain: Period = serde_json::from_str(r#"["Mon-Fri 10:00-18:00"]"#).unwrap();
        assert!(!plain.holidays_off);
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"["Mon-Fri 10:00-18:00"]"#
        );
        let flagged: Period =
            serde_json::from_str(r#"{"spans":["Mon-Fri 10:00-18:00"],"holidays_off":true}"#)
                .unwrap();
        assert!(flagged.holidays_off);
        let back: Period = serde_json::from_str(&serde_json::to_string(&flagged).unwrap()).unwrap();
        assert_eq!(back, flagged);

        let err = serde_json::from_str::<Period>(r#"["Mon-Fry 10:00-18:00"]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"Fry\" is not a day"), "{err}");
        let err = serde_json::from_str::<Period>(r#"{"spans":[],"holiday_off":true}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holiday_off"), "{err}");
    }
}
