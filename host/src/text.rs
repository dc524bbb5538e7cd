//! Text clipping shared by the domains that write short texts from long ones (agent
//! names from tasks, the offline Mind's summaries), so they all cut the same way.

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

#[cfg(test)]
mod tests {
    use super::shorten;

    #[test]
    fn words_are_kept_whole_unless_the_first_is_too_long() {
        assert_eq!(shorten("one two three", 8), "one two");
        assert_eq!(shorten(&"x".repeat(100), 60).chars().count(), 60);
    }
}
