//! The reports' prose lives in markdown templates (`benches/templates/`),
//! with named placeholders `{name}` (ASCII letters, digits and `_`) that
//! [`fill`] replaces with the measured tables and figures. `{{` and `}}`
//! write a literal brace.
//!
//! Strict on purpose: a placeholder without a value, a value that no
//! placeholder uses, and an unbalanced brace are all errors, so a report
//! can neither print a raw `{name}` nor silently drop a table.

use core::fmt;

/// Why a template could not be filled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateError {
    /// `{name}` in the template, with no value given.
    Unfilled(String),
    /// A value given for a name the template does not use.
    Unused(String),
    /// A `{` without its `}`, or a stray `}` (byte offset).
    Unbalanced(usize),
    /// A placeholder whose name is not `[A-Za-z0-9_]+` (byte offset).
    BadName(usize),
    /// The same name given twice.
    Duplicate(String),
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::Unfilled(n) => write!(f, "placeholder {{{n}}} has no value"),
            TemplateError::Unused(n) => write!(f, "value {n} is not used by the template"),
            TemplateError::Unbalanced(i) => write!(f, "unbalanced brace at byte {i}"),
            TemplateError::BadName(i) => write!(f, "bad placeholder name at byte {i}"),
            TemplateError::Duplicate(n) => write!(f, "value {n} given twice"),
        }
    }
}

impl core::error::Error for TemplateError {}

/// `template` with every `{name}` replaced by the value of `name` in
/// `values`.
///
/// # Errors
///
/// See [`TemplateError`].
pub fn fill(template: &str, values: &[(&str, &str)]) -> Result<String, TemplateError> {
    for (i, (a, _)) in values.iter().enumerate() {
        if values[..i].iter().any(|(b, _)| a == b) {
            return Err(TemplateError::Duplicate((*a).to_owned()));
        }
    }
    let mut used = vec![false; values.len()];
    let mut out = String::with_capacity(template.len());
    let bytes = template.as_bytes();
    let mut i = 0;
    let mut plain = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                out.push_str(&template[plain..i]);
                out.push('{');
                i += 2;
                plain = i;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                out.push_str(&template[plain..i]);
                out.push('}');
                i += 2;
                plain = i;
            }
            b'}' => return Err(TemplateError::Unbalanced(i)),
            b'{' => {
                out.push_str(&template[plain..i]);
                let end = template[i + 1..]
                    .find('}')
                    .ok_or(TemplateError::Unbalanced(i))?
                    + i
                    + 1;
                let name = &template[i + 1..end];
                if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    return Err(TemplateError::BadName(i));
                }
                let k = values
                    .iter()
                    .position(|(n, _)| *n == name)
                    .ok_or_else(|| TemplateError::Unfilled(name.to_owned()))?;
                used[k] = true;
                out.push_str(values[k].1);
                i = end + 1;
                plain = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&template[plain..]);
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(TemplateError::Unused(values[k].0.to_owned()));
    }
    Ok(out)
}

/// [`fill`] with owned values (what a report usually has: rendered tables
/// and formatted figures).
///
/// # Errors
///
/// See [`TemplateError`].
pub fn fill_values(template: &str, values: &[(&str, String)]) -> Result<String, TemplateError> {
    let v: Vec<(&str, &str)> = values.iter().map(|(k, x)| (*k, x.as_str())).collect();
    fill(template, &v)
}

/// The distinct placeholder names of `template`, in first-seen order.
///
/// # Errors
///
/// [`TemplateError::Unbalanced`] or [`TemplateError::BadName`] for a
/// malformed template.
pub fn placeholders(template: &str) -> Result<Vec<String>, TemplateError> {
    let mut names: Vec<String> = Vec::new();
    let mut rest = template;
    let mut offset = 0;
    while let Some(i) = rest.find(['{', '}']) {
        let b = rest.as_bytes();
        if b.get(i + 1) == Some(&b[i]) {
            rest = &rest[i + 2..];
            offset += i + 2;
            continue;
        }
        if b[i] == b'}' {
            return Err(TemplateError::Unbalanced(offset + i));
        }
        let end = rest[i + 1..]
            .find('}')
            .ok_or(TemplateError::Unbalanced(offset + i))?
            + i
            + 1;
        let name = &rest[i + 1..end];
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            return Err(TemplateError::BadName(offset + i));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
        rest = &rest[end + 1..];
        offset += end + 1;
    }
    Ok(names)
}

/// A markdown table: the header row, the separator, then one line per row
/// (cells joined as given; a `|` inside a cell is escaped).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_placeholders() {
        assert_eq!(
            placeholders("{a} {{x}} {b} {a}").unwrap(),
            vec!["a".to_owned(), "b".to_owned()]
        );
        assert_eq!(placeholders("x {a"), Err(TemplateError::Unbalanced(2)));
        assert_eq!(placeholders("x {a-b}"), Err(TemplateError::BadName(2)));
    }

    /// Every template in `benches/templates/` is well formed, and fills
    /// with a value for each of its placeholders.
    #[test]
    fn report_templates_are_well_formed() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/templates");
        let mut seen = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let t = std::fs::read_to_string(&path).unwrap();
            let names = placeholders(&t).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let values: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
            fill(&t, &values).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
        assert!(seen >= 4, "templates found: {seen}");
    }

    #[test]
    fn tables() {
        let t = table(&["a", "b"], &[vec!["1".into(), "x|y".into()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| 1 | x\\|y |\n");
    }

    #[test]
    fn fills_every_placeholder() {
        let t = "# {title}\n\nat {commit}, {commit} again; {{literal}} µ\n";
        let s = fill(t, &[("title", "Report"), ("commit", "abc")]).unwrap();
        assert_eq!(s, "# Report\n\nat abc, abc again; {literal} µ\n");
    }

    #[test]
    fn values_are_not_rescanned() {
        let s = fill("{a}", &[("a", "{b} }")]).unwrap();
        assert_eq!(s, "{b} }");
    }

    #[test]
    fn unfilled_placeholder_is_an_error() {
        assert_eq!(
            fill("x {missing} y", &[]),
            Err(TemplateError::Unfilled("missing".into()))
        );
    }

    #[test]
    fn unused_value_is_an_error() {
        assert_eq!(
            fill("x {a}", &[("a", "1"), ("b", "2")]),
            Err(TemplateError::Unused("b".into()))
        );
    }

    #[test]
    fn malformed_templates_are_errors() {
        assert_eq!(
            fill("x {a", &[("a", "")]),
            Err(TemplateError::Unbalanced(2))
        );
        assert_eq!(fill("x } y", &[]), Err(TemplateError::Unbalanced(2)));
        assert_eq!(fill("x {a b}", &[]), Err(TemplateError::BadName(2)));
        assert_eq!(fill("x {}", &[]), Err(TemplateError::BadName(2)));
        assert_eq!(
            fill("{a}", &[("a", "1"), ("a", "2")]),
            Err(TemplateError::Duplicate("a".into()))
        );
    }
}
