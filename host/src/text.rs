//! Text clipping shared by the domains that write short texts from long ones (agent
//! names from tasks, the offline Mind's summaries, tools' results), so they all cut the
//! same way; and the one snake_case rule of the names tenants give things (components,
//! tools).

use crate::invalid::Invalid;

/// `text`'s first words, at most `max` characters (cut mid-word only when the first word
/// is longer).
pub fn shorten(text: &str, max: usize) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        let extra = word.chars().count() + usize::from(!out.is_empty());
        if out.chars().count() + extra > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = text.trim().chars().take(max).collect();
    }
    out
}

/// `text` whole when it has at most `max` characters, else its first `max` and a line
/// saying how long it was.
pub fn cut(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[cut: {count} characters, the first {max} shown]")
}

/// A name is snake_case — a lowercase letter, then lowercase letters, digits or
/// underscores — of at most `max` characters; the refusal (of the field `name`) says what
/// to fix.
pub fn check_snake_case(name: &str, max: usize) -> Result<(), Invalid> {
    let mut chars = name.chars();
    let snake = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if name.len() > max {
        return Err(Invalid::new(
            "name",
            format!("name is {} characters; the limit is {max}", name.len()),
        ));
    }
    if !snake {
        return Err(Invalid::new(
            "name",
            format!(
                "name {name:?} must be snake_case: a lowercase letter, then lowercase \
                 letters, digits or underscores"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_snake_case, cut, shorten};

    #[test]
    fn a_long_text_is_cut_and_says_so() {
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(
            cut("héllo", 2),
            "hé\n[cut: 5 characters, the first 2 shown]"
        );
    }

    #[test]
    fn names_are_snake_case_within_their_bound() {
        assert!(check_snake_case("get_weather2", 12).is_ok());
        assert!(
            check_snake_case("get_weather2", 11)
                .unwrap_err()
                .message
                .contains("limit is 11")
        );
        for bad in ["", "Weather", "2x", "get-weather", "_x"] {
            assert!(
                check_snake_case(bad, 64)
                    .unwrap_err()
                    .message
                    .contains("snake_case"),
                "{bad}"
            );
        }
    }

    #[test]
    fn words_are_kept_whole_unless_the_first_is_too_long() {
        assert_eq!(shorten("one two three", 8), "one two");
        assert_eq!(shorten(&"x".repeat(100), 60).chars().count(), 60);
    }
}
