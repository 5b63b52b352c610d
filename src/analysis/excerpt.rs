//! A stored message as one line a report can show, with both ends of it: its first and last
//! non-empty lines (` … ` between them when there are more), and when that is longer than
//! the report's width, its head and its tail around ` … `. So what a long message says at its
//! end — the kernel an XLA error names after a long graph name, a last line saying what
//! went wrong — stays visible. The store keeps the whole message (docs/protocol.md).

/// `message` on one line, at most `max` characters (`max` ≥ 8): the first non-empty line, and
/// the last one after ` … ` when there are several; when longer than `max`, at most its first
/// `max − 2max/5 − 3` and its last `2max/5` characters around ` … `, each cut at a word
/// boundary (a space) so that no number or name is cut in two — unless the nearest space
/// would give up more than half of that part, when it is cut where it falls.
pub fn excerpt(message: &str, max: usize) -> String {
    let lines: Vec<&str> = message.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let line = match lines.as_slice() {
        [] => String::new(),
        [one] => one.split_whitespace().collect::<Vec<_>>().join(" "),
        [first, .., last] => format!("{first} … {last}"),
    };
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= max {
        return line;
    }
    let tail = 2 * max / 5;
    let head = max.saturating_sub(tail + 3);
    let head_end = word_end(&chars, head);
    let tail_start = word_start(&chars, chars.len() - tail);
    let head: String = chars[..head_end].iter().collect();
    let tail: String = chars[tail_start..].iter().collect();
    format!("{} … {}", head.trim_end(), tail.trim_start())
}

/// Where a head of at most `limit` characters ends: at `limit` when a word ends there, else at
/// the last space before it, unless that keeps less than half of `limit`.
fn word_end(chars: &[char], limit: usize) -> usize {
    if limit == 0 || chars.get(limit).is_none_or(|c| c.is_whitespace()) || chars[limit - 1].is_whitespace() {
        return limit;
    }
    match chars[..limit].iter().rposition(|c| c.is_whitespace()) {
        Some(space) if space >= limit / 2 => space,
        _ => limit,
    }
}

/// Where a tail starting at or after `from` starts: at `from` when a word starts there, else
/// just after the next space, unless that gives up more than half of the tail.
fn word_start(chars: &[char], from: usize) -> usize {
    if from == 0 || chars[from - 1].is_whitespace() || chars.get(from).is_none_or(|c| c.is_whitespace()) {
        return from;
    }
    let keep = chars.len() - from;
    match chars[from..].iter().position(|c| c.is_whitespace()) {
        Some(offset) if offset <= keep / 2 => from + offset + 1,
        _ => from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_messages_are_whole_and_on_one_line() {
        assert_eq!(excerpt("a  b\tc", 50), "a b c");
        assert_eq!(excerpt("", 10), "");
        assert_eq!(excerpt("\n  first line\nmiddle\n  last line \n", 50), "first line … last line");
    }

    #[test]
    fn a_long_message_keeps_its_head_and_its_tail() {
        // The shape of XLA's error: a graph name that fills the line, the cause at its end.
        let graph = "a_very_long_graph_name_".repeat(20);
        let m = format!("UNIMPLEMENTED: {graph} ... No registered 'Erfinv' OpKernel for XLA_CPU_JIT devices");
        let e = excerpt(&m, 160);
        assert!(e.chars().count() <= 160, "{} chars: {e}", e.chars().count());
        assert!(e.starts_with("UNIMPLEMENTED: a_very_long_graph_name_"), "{e}");
        assert!(e.ends_with("... No registered 'Erfinv' OpKernel for XLA_CPU_JIT devices"), "{e}");
        assert!(e.contains(" … "), "{e}");
    }

    #[test]
    fn numbers_are_never_cut_in_two() {
        // The message of a float16 cumsum that a JSON report cut to "27860 ULP".
        let m = "disagrees with numpy.cumsum in float64 (output 0): 926 of 2048 elements (45.21%) beyond \
                 rtol 0.001, atol 1e-05: max abs 1.2e0, max rel 5.5e-2, 127860 ULP (float16); worst at [2, 502]: \
                 21 vs 22.22429656982422";
        // From 85 characters on, each part is at least twice the longest word (17 characters).
        for max in 85..m.len() {
            let e = excerpt(m, max);
            assert!(e.chars().count() <= max, "{max}: {e}");
            let (head, tail) = e.split_once(" … ").unwrap_or((&e, ""));
            // Every word of the excerpt is a whole word of the message.
            for word in head.split_whitespace().chain(tail.split_whitespace()) {
                assert!(
                    m.split_whitespace().any(|w| w == word),
                    "max {max}: {word:?} is not a word of the message: {e}"
                );
            }
        }
        assert!(excerpt(m, 120).ends_with("21 vs 22.22429656982422"), "{}", excerpt(m, 120));
    }
}
