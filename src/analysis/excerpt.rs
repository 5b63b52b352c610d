//! A stored message as one line a report can show, with both ends of it: its first and last
//! non-empty lines (` … ` between them when there are more), and when that is longer than
//! the report's width, its head and its tail around ` … `. So what a long message says at its
//! end — the kernel an XLA error names after a long graph name, a last line saying what
//! went wrong — stays visible. The store keeps the whole message (docs/protocol.md).

/// `message` on one line, at most `max` characters (`max` ≥ 8): the first non-empty line, and
/// the last one after ` … ` when there are several; when longer than `max`, its first
/// `max − 2max/5 − 3` and its last `2max/5` characters around ` … `.
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
    let head: String = chars[..head].iter().collect();
    let tail: String = chars[chars.len() - tail..].iter().collect();
    format!("{} … {}", head.trim_end(), tail.trim_start())
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
}
