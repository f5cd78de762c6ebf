//! qmgr's calendar: the site's week, changed live.
//!
//! ```text
//! set calendar time_zone = Europe/London
//! set calendar prime_time = "Mon-Fri 09:00-17:00"
//! set calendar holidays += "12-25 Christmas Day; 2027-03-26 Good Friday"
//! set calendar period.DAY = "Mon-Fri 10:00-18:00; holidays_off"
//! unset calendar period.DAY
//! list calendar
//! ```
//!
//! Lists of spans and of holidays are separated by `;` (day lists inside a
//! span use `,`: `Sat,Sun`). Only managers change the calendar; a change
//! that leaves a queue or node group naming a missing period is refused.

use super::values::quoted;
use super::vocab::{Action, Assignment, Op, Outcome};
use crate::calendar::{Calendar, Holiday, Period, Span, check_name};
use crate::server::Config;

/// Calendar attributes, for messages and help.
pub const CALENDAR_ATTRS: &[&str] = &["time_zone", "prime_time", "holidays", "period.NAME"];

fn unknown(attr: &str) -> String {
    format!(
        "unknown attribute \"{attr}\" for the calendar; known: {}",
        CALENDAR_ATTRS.join(", ")
    )
}

/// Items of a `;`-separated value, each read as `T`.
fn items<T: std::str::FromStr>(value: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<T>().map_err(|e| e.to_string()))
        .collect()
}

fn update<T: std::str::FromStr + PartialEq + std::fmt::Display>(
    list: &mut Vec<T>,
    name: &str,
    op: Op,
    value: &str,
) -> Result<(), String>
where
    T::Err: std::fmt::Display,
{
    let new: Vec<T> = items(value)?;
    match op {
        Op::Assign => *list = new,
        Op::Add => {
            for item in new {
                if !list.contains(&item) {
                    list.push(item);
                }
            }
        }
        Op::Remove => {
            for item in new {
                let before = list.len();
                list.retain(|x| *x != item);
                if list.len() == before {
                    return Err(format!("\"{item}\" is not in {name}"));
                }
            }
        }
    }
    Ok(())
}

fn set(calendar: &mut Calendar, a: &Assignment) -> Result<(), String> {
    let value = a.value.trim();
    if let Some(name) = a.name.strip_prefix("period.") {
        if a.op != Op::Assign {
            return Err(format!("{} takes a whole period: use =", a.name));
        }
        check_name(name).map_err(|e| e.to_string())?;
        let period: Period = value
            .parse()
            .map_err(|e: crate::calendar::CalendarError| e.to_string())?;
        calendar.periods.insert(name.to_string(), period);
        return Ok(());
    }
    match a.name.to_ascii_lowercase().as_str() {
        "time_zone" | "timezone" => {
            if a.op != Op::Assign {
                return Err("time_zone takes a single value: use =".into());
            }
            let before = std::mem::replace(&mut calendar.time_zone, value.to_string());
            if let Err(e) = calendar.zone() {
                calendar.time_zone = before;
                return Err(e.to_string());
            }
        }
        "prime_time" => update::<Span>(&mut calendar.prime_time, "prime_time", a.op, value)?,
        "holidays" | "holiday" => {
            update::<Holiday>(&mut calendar.holidays, "holidays", a.op, value)?
        }
        _ => return Err(unknown(&a.name)),
    }
    Ok(())
}

fn unset(calendar: &mut Calendar, attr: &str) -> Result<(), String> {
    if let Some(name) = attr.strip_prefix("period.") {
        if calendar.periods.remove(name).is_none() {
            return Err(format!(
                "period \"{name}\" does not exist; see qmgr -c \"list calendar\""
            ));
        }
        return Ok(());
    }
    let fresh = Calendar::default();
    match attr.to_ascii_lowercase().as_str() {
        "time_zone" | "timezone" => calendar.time_zone = fresh.time_zone,
        "prime_time" => calendar.prime_time = fresh.prime_time,
        "holidays" | "holiday" => calendar.holidays.clear(),
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// Applies a calendar command; `Ok(false)` if `action` is not one.
pub fn apply(action: &Action, config: &mut Config, outcome: &mut Outcome) -> Result<bool, String> {
    match action {
        Action::SetCalendar(assigns) => {
            for a in assigns {
                set(&mut config.calendar, a)?;
            }
        }
        Action::UnsetCalendar(attrs) => {
            for attr in attrs {
                unset(&mut config.calendar, attr)?;
            }
        }
        Action::ListCalendar => outcome.output.push_str(&list(&config.calendar)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// The qmgr commands that give the calendar a PBS `holidays` file's prime
/// time and holidays (qmgr's `import holidays FILE`, expanded by the
/// client, which reads the file): the prime time replaces ours, the
/// holidays are added.
pub fn import_holidays_commands(text: &str) -> Result<String, crate::calendar::CalendarError> {
    let (prime, holidays) = crate::calendar::import_pbs_holidays(text)?;
    let mut out = format!("set calendar prime_time = \"{}\"\n", joined(&prime));
    if !holidays.is_empty() {
        out.push_str(&format!(
            "set calendar holidays += \"{}\"\n",
            joined(&holidays)
        ));
    }
    Ok(out)
}

fn joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn list(calendar: &Calendar) -> String {
    let mut out = String::from("Calendar\n");
    out.push_str(&format!("    time_zone = {}\n", calendar.time_zone));
    out.push_str(&format!(
        "    prime_time = {}\n",
        joined(&calendar.prime_time)
    ));
    out.push_str(&format!("    holidays = {}\n", joined(&calendar.holidays)));
    for (name, period) in &calendar.periods {
        out.push_str(&format!("    period.{name} = {period}\n"));
    }
    out.push('\n');
    out
}

/// qmgr commands that recreate the calendar (printed first: queues and
/// node groups name its periods).
pub fn print(config: &Config) -> String {
    let calendar = &config.calendar;
    let fresh = Calendar::default();
    if *calendar == fresh {
        return String::new();
    }
    let mut out = String::from("#\n# The calendar: time zone, prime time, holidays, periods.\n#\n");
    if calendar.time_zone != fresh.time_zone {
        out.push_str(&format!(
            "set calendar time_zone = {}\n",
            quoted(&calendar.time_zone)
        ));
    }
    if calendar.prime_time != fresh.prime_time {
        out.push_str(&format!(
            "set calendar prime_time = \"{}\"\n",
            joined(&calendar.prime_time)
        ));
    }
    if !calendar.holidays.is_empty() {
        out.push_str(&format!(
            "set calendar holidays = \"{}\"\n",
            joined(&calendar.holidays)
        ));
    }
    for (name, period) in &calendar.periods {
        out.push_str(&format!("set calendar period.{name} = \"{period}\"\n"));
    }
    out
}

/// `unset calendar` lines for what the configuration file's calendar
/// (`file`) has and `config`'s no longer does, for the end of a backup
/// (queues and node groups may name the periods until then).
pub fn print_removals(config: &Config, file: &Config) -> String {
    let (now, seeded, fresh) = (&config.calendar, &file.calendar, Calendar::default());
    let mut gone = Vec::new();
    if now.time_zone == fresh.time_zone && seeded.time_zone != fresh.time_zone {
        gone.push("time_zone".to_string());
    }
    if now.prime_time == fresh.prime_time && seeded.prime_time != fresh.prime_time {
        gone.push("prime_time".to_string());
    }
    if now.holidays.is_empty() && !seeded.holidays.is_empty() {
        gone.push("holidays".to_string());
    }
    for name in seeded
        .periods
        .keys()
        .filter(|p| !now.periods.contains_key(*p))
    {
        gone.push(format!("period.{name}"));
    }
    gone.iter()
        .map(|attr| format!("unset calendar {attr}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::run_as;
    use crate::access::Role;
    use crate::state::tests::state;

    #[test]
    fn the_calendar_is_set_listed_and_printed_back() {
        let st = state(2);
        let mut config = st.config().clone();
        let script = "set calendar time_zone = Europe/London\n\
                      set calendar prime_time = \"Mon-Fri 08:30-17:30\"\n\
                      set calendar holidays = \"12-25 Christmas Day; 2027-03-26 Good Friday\"\n\
                      set calendar period.DAY = \"Mon-Fri 10:00-18:00; holidays_off\"\n\
                      set calendar period.WEEKEND = \"Fri 18:00-24:00; Sat-Sun; Mon 00:00-10:00\"\n\
                      set queue batch periods = DAY, priority.WEEKEND = 5\n\
                      list calendar\n";
        let out = run_as(Role::Manager, script, &mut config, &st).unwrap();
        assert!(
            out.output.contains("time_zone = Europe/London"),
            "{}",
            out.output
        );
        assert!(
            out.output
                .contains("period.DAY = Mon-Fri 10:00-18:00; holidays_off"),
            "{}",
            out.output
        );
        let printed = super::super::print_server(&config);
        let mut rebuilt = crate::server::Config::default();
        run_as(Role::Manager, &printed, &mut rebuilt, &st).unwrap();
        assert_eq!(rebuilt, config, "{printed}");
    }

    #[test]
    fn calendar_errors_are_named_and_change_nothing() {
        let st = state(2);
        let mut config = st.config().clone();
        run_as(
            Role::Manager,
            "set calendar period.DAY = \"Mon-Fri 10:00-18:00\"\nset queue batch periods = DAY",
            &mut config,
            &st,
        )
        .unwrap();
        let before = config.clone();
        for (script, says) in [
            ("set calendar time_zone = Europe/Londn", "Europe/Londn"),
            (
                "set calendar period.NIGHT = \"Mon-Fri 25:00-10:00\"",
                "25:00",
            ),
            ("set calendar period.prime = daily", "prime"),
            (
                "unset calendar period.DAY",
                "queue \"batch\": period \"DAY\" does not exist",
            ),
            (
                "set queue batch periods += NIGHT",
                "period \"NIGHT\" does not exist",
            ),
            ("set calendar colour = blue", "unknown attribute \"colour\""),
        ] {
            let err = run_as(Role::Manager, script, &mut config.clone(), &st).unwrap_err();
            assert!(err.message.contains(says), "{script}: {err}");
        }
        assert_eq!(config, before);
        assert!(
            run_as(
                Role::Operator,
                "set calendar time_zone = UTC",
                &mut config,
                &st
            )
            .is_err()
        );
    }
}
