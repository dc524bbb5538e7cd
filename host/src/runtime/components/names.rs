//! What a component is called: its name (snake_case, like memory keys), its version
//! (semantic versioning), and how a spawn names one (`cmp_…`, `name` or `name@version`).

use semver::Version;

use crate::invalid::Invalid;

/// Longest component name.
pub const MAX_NAME_CHARS: usize = 128;
/// Longest version: a bound for storage keys; every version of up to 19-digit numbers fits.
pub const MAX_VERSION_CHARS: usize = 128;
/// A version, as the server accepts it (semver.org's grammar, numbers of at most 19
/// digits so each fits in 64 bits), for the OpenAPI document.
pub const VERSION_PATTERN: &str = "^(0|[1-9][0-9]{0,18})\\.(0|[1-9][0-9]{0,18})\\.(0|[1-9][0-9]{0,18})(-((0|[1-9][0-9]{0,18}|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\\.(0|[1-9][0-9]{0,18}|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\\+[0-9a-zA-Z-]+(\\.[0-9a-zA-Z-]+)*)?$";
/// The prefix of component ids.
pub const ID_PREFIX: &str = "cmp_";

/// A component name is snake_case: a lowercase letter, then lowercase letters, digits or
/// underscores, at most [`MAX_NAME_CHARS`]. The message says what to fix.
pub fn check_name(name: &str) -> Result<(), Invalid> {
    crate::text::check_snake_case(name, MAX_NAME_CHARS)
}

/// A version is semantic (`MAJOR.MINOR.PATCH`, then optionally `-pre` and `+build`), its
/// numbers without leading zeros and of at most 19 digits.
pub fn check_version(version: &str) -> Result<Version, Invalid> {
    const MAX_NUMBER: u64 = 9_999_999_999_999_999_999;
    let digits_fit = |id: &str| !id.bytes().all(|b| b.is_ascii_digit()) || id.len() <= 19;
    Version::parse(version)
        .ok()
        .filter(|v| {
            version.len() <= MAX_VERSION_CHARS
                && [v.major, v.minor, v.patch].iter().all(|&n| n <= MAX_NUMBER)
                && v.pre.as_str().split('.').all(digits_fit)
        })
        .ok_or_else(|| {
            Invalid::new(
                "version",
                format!(
                    "version {version:?} is not a semantic version such as 1.2.0 or \
                     2.0.0-beta.1 (MAJOR.MINOR.PATCH, numbers without leading zeros)"
                ),
            )
        })
}

/// What a spawn's `agent` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec<'a> {
    /// A component id, or a name that happens to start with `cmp_`: the id is tried first.
    Id(&'a str),
    /// The newest version (highest semver) of a name.
    Newest(&'a str),
    /// One version of a name.
    Exact { name: &'a str, version: &'a str },
}

impl<'a> Spec<'a> {
    /// Reads `cmp_…`, `name@version` or `name`.
    pub fn parse(spec: &'a str) -> Self {
        match spec.split_once('@') {
            Some((name, version)) => Spec::Exact { name, version },
            None if spec.starts_with(ID_PREFIX) => Spec::Id(spec),
            None => Spec::Newest(spec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case_and_bounded() {
        check_name("notes_agent").unwrap();
        check_name(&"a".repeat(MAX_NAME_CHARS)).unwrap();
        for bad in ["", "Notes", "1st", "notes-agent", "_x", "notes agent"] {
            assert!(
                check_name(bad).unwrap_err().message.contains("snake_case"),
                "{bad}"
            );
        }
        assert!(
            check_name(&"a".repeat(MAX_NAME_CHARS + 1))
                .unwrap_err()
                .message
                .contains("limit is 128")
        );
    }

    #[test]
    fn versions_are_semantic_and_match_the_documented_pattern() {
        let pattern = regex_lite(VERSION_PATTERN);
        for good in [
            "1.2.0",
            "0.0.1",
            "2.0.0-beta.1",
            "1.0.0+build.5",
            "1.0.0-rc.1+001",
            "1234567890123456789.0.0",
            "1.0.0+00000000000000000000001",
            "1.0.0-12345678901234567890-x",
        ] {
            check_version(good).unwrap();
            assert!(pattern(good), "{good}");
        }
        for bad in [
            "1.2",
            "01.2.3",
            "1.2.3-",
            "1.2.3-01",
            "v1.2.3",
            "",
            "12345678901234567890.0.0",
            "1.0.0-12345678901234567890",
            "10000000000000000000.0.0",
        ] {
            assert!(
                check_version(bad).unwrap_err().message.contains("semantic"),
                "{bad}"
            );
            assert!(!pattern(bad), "{bad}");
        }
    }

    /// The documented pattern, run by a real regex engine (the one the OpenAPI checks use).
    fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
        let schema = serde_json::json!({ "type": "string", "pattern": pattern });
        let validator = jsonschema::validator_for(&schema).unwrap();
        move |s| validator.is_valid(&serde_json::json!(s))
    }

    #[test]
    fn specs_name_an_id_a_newest_version_or_one_version() {
        assert_eq!(Spec::parse("cmp_01abc"), Spec::Id("cmp_01abc"));
        assert_eq!(Spec::parse("notes_agent"), Spec::Newest("notes_agent"));
        assert_eq!(
            Spec::parse("notes_agent@1.2.0"),
            Spec::Exact {
                name: "notes_agent",
                version: "1.2.0"
            }
        );
    }
}
