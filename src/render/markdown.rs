//! Markdown helpers (GitHub-flavoured): table rows, delimiter rows, code spans and the
//! escaping of prose, shared by every Markdown rendering.

/// One table row: cells kept on one line, pipes escaped (GFM allows `\|` in code spans too).
/// Cells are either our own words or already wrapped by [`code`].
pub fn row<S: AsRef<str>>(cells: &[S]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.as_ref().replace(['\n', '\r'], " ").replace('|', "\\|")).collect();
    format!("| {} |", cells.join(" | "))
}

/// The delimiter row; `true` right-aligns a column.
pub fn rule_row(right: &[bool]) -> String {
    let cells: Vec<&str> = right.iter().map(|&r| if r { "---:" } else { "---" }).collect();
    format!("| {} |", cells.join(" | "))
}

/// A code span around verbatim text (names, keys, messages), fenced with more
/// backticks than any run inside it.
pub fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Escapes what Markdown would read as markup in prose (emphasis, links, HTML, code).
/// Underscores stay: GFM does not read them as emphasis inside words like `not_implemented`.
/// Pipes are left to [`row`], which escapes them once inside table cells.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '<' | '[' | ']' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("torch.linalg.matrix_norm"), "`torch.linalg.matrix_norm`");
        assert_eq!(code("use `x` here"), "``use `x` here``");
        assert_eq!(row(&[code("a|b"), "x\ny".into()]), "| `a\\|b` | x y |");
        assert_eq!(escape("2*3 [x] <b>"), "2\\*3 \\[x\\] \\<b>");
        // A pipe in a message is escaped once, in the cell: GFM reads `\\|` as a literal pipe.
        assert_eq!(row(&[escape("unsupported operand type(s) for |")]), "| unsupported operand type(s) for \\| |");
    }
}
