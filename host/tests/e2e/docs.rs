//! The documents a newcomer reads: a README short enough to read through, whose map names
//! every top-level module of the crate and every workspace member; a file per subject in
//! `docs/`, each with its contents; and links that all stay in the repository and land on
//! a file and, when they name one, a heading.

use std::path::{Path, PathBuf};

/// Most lines the README may have.
const README_MAX_LINES: usize = 300;

/// The workspace's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// README.md and the Markdown files directly in `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo().join("README.md"));
    docs
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The anchor a heading gets: lowercased, punctuation dropped, spaces made hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The headings of a document, (level, text), outside code blocks.
fn headings(text: &str) -> Vec<(usize, String)> {
    prose(text)
        .lines()
        .filter_map(|line| {
            let level = line.chars().take_while(|c| *c == '#').count();
            let text = line.get(level..)?.strip_prefix(' ')?;
            (level > 0).then(|| (level, text.to_owned()))
        })
        .collect()
}

/// Every Markdown link target `](…)` of the prose.
fn links(text: &str) -> Vec<String> {
    prose(text)
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_link_stays_in_the_repository_and_lands() {
    let root = std::fs::canonicalize(repo()).unwrap();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(repo()).unwrap().display().to_string();
        assert!(
            !text.contains("../shared"),
            "{name} points outside the repository"
        );
        for link in links(&text) {
            assert!(
                !link.contains("://") && !link.starts_with("mailto:"),
                "{name}: {link} leaves the repository"
            );
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            let target = std::fs::canonicalize(&target)
                .unwrap_or_else(|_| panic!("{name}: {link} names no file"));
            assert!(
                target.starts_with(&root),
                "{name}: {link} leaves the repository"
            );
            if !anchor.is_empty() {
                let slugs: Vec<String> = headings(&std::fs::read_to_string(&target).unwrap())
                    .iter()
                    .map(|(_, h)| slug(h))
                    .collect();
                assert!(
                    slugs.iter().any(|s| s == anchor),
                    "{name}: {link} names no heading of {}",
                    target.display()
                );
            }
        }
    }
}

#[test]
fn each_document_in_docs_lists_its_sections() {
    for doc in documents().into_iter().skip(1) {
        let text = std::fs::read_to_string(&doc).unwrap();
        let targets = links(&text);
        for (_, heading) in headings(&text).iter().filter(|(level, _)| *level == 2) {
            let anchor = format!("#{}", slug(heading));
            assert!(
                targets.contains(&anchor),
                "{}: its contents leave out {heading:?}",
                doc.display()
            );
        }
    }
}

#[test]
fn the_readme_is_short_and_maps_every_module_and_member() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; move a subject to docs/"
    );
    // A module is `NAME.rs`, `NAME/` or both (its file and its children's folder).
    for entry in std::fs::read_dir(repo().join("host/src")).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let module = file.strip_suffix(".rs").unwrap_or(&file);
        let named = [format!("`{module}.rs`"), format!("`{module}/`")]
            .iter()
            .any(|n| readme.contains(n));
        assert!(
            file == "lib.rs" || named,
            "README.md's map does not name the module {module} of host/src"
        );
    }
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("Cargo.toml")).unwrap()).unwrap();
    for member in manifest["workspace"]["members"].as_array().unwrap() {
        let member = member.as_str().unwrap();
        let (parent, leaf) = member.rsplit_once('/').unwrap_or(("", member));
        let named = readme.contains(&format!("`{member}/`"))
            || (readme.contains(&format!("`{parent}/`")) && readme.contains(&format!("`{leaf}`")));
        assert!(named, "README.md's map does not name the member {member}");
    }
}
