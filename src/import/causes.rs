//! The exceptions inside one failed test's longrepr, beyond its crash line: the members of an
//! `ExceptionGroup` (Hypothesis' "found 2 distinct failures", printed by Python's
//! `traceback` with `|` margins) and the earlier links of a chain (pytest's `E   Type: message`
//! blocks separated by "The above exception was the direct cause ..."). Each is returned as
//! its `Type: message` line, in the order printed; the outcome rules then classify each one
//! (`crate::outcome::imported`) and keep the most specific.

/// The `Type: message` (or `assert ...`) lines of every exception printed in `longrepr`, in
/// order, without duplicates. Continuation lines of a multi-line message are not separate
/// exceptions and are left out.
pub fn causes(longrepr: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut previous_e = false;
    for line in longrepr.lines() {
        let candidate = if let Some(rest) = line.strip_prefix("E ") {
            let first = !previous_e;
            previous_e = true;
            first.then(|| rest.trim())
        } else {
            previous_e = false;
            let t = line.trim_start();
            t.strip_prefix('|').map(str::trim)
        };
        let Some(text) = candidate.filter(|t| is_exception_line(t)) else { continue };
        if !out.iter().any(|o| o == text) {
            out.push(text.to_string());
        }
    }
    out
}

/// `pkg.Type: message`, `Type` alone at the end of a traceback, or a bare `assert ...`.
fn is_exception_line(text: &str) -> bool {
    if text.starts_with("assert ") {
        return true;
    }
    let ty = text.split_once(':').map_or(text, |(t, _)| t);
    let ident = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let last = ty.rsplit('.').next().unwrap_or(ty);
    !ty.is_empty()
        && ty.split('.').all(ident)
        && text.contains(':')
        && (last.ends_with("Error")
            || last.ends_with("Exception")
            || last.ends_with("Group")
            || last.ends_with("Failure")
            || last.ends_with("Exceeded")
            || last.ends_with("Check")
            || last == "Flaky"
            || last.ends_with("Interrupt")
            || last == "Failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_members_and_chain_links_are_found() {
        let group = "+ Exception Group Traceback (most recent call last):\n  |   File \"/t.py\", line 5, in test_group\n  |     raise ExceptionGroup(\"x\", [\n  | ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)\n  +-+---------------- 1 ----------------\n    | NotImplementedError: \"sum_cpu\" not implemented for 'UInt16'\n    +---------------- 2 ----------------\n    | AssertionError: assert 3 == 4\n    +------------------------------------";
        assert_eq!(
            causes(group),
            [
                "ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)",
                "NotImplementedError: \"sum_cpu\" not implemented for 'UInt16'",
                "AssertionError: assert 3 == 4"
            ]
        );
        let chain = "def f():\n>   raise ValueError(\"inner\")\nE   ValueError: inner\n\nt.py:12: ValueError\n\nThe above exception was the direct cause of the following exception:\n\nE   RuntimeError: outer wrapper\nE    +  where x = y\n";
        assert_eq!(causes(chain), ["ValueError: inner", "RuntimeError: outer wrapper"]);
    }
}
