//! A Wadler–Lindig document layout engine with the exact semantics of JAX's
//! C++ pretty printer (`jaxlib/_pretty_printer.cc`).
//!
//! Semantics:
//! - The agenda starts as `(indent 0, BREAK, root)`: a break outside every
//!   group is always a newline.
//! - A group is laid out flat iff the group *alone* fits in the rest of the
//!   line (`width - column`); the rest of the document is not looked at.
//!   The fits check stops as soon as the budget goes negative, so it is
//!   bounded by the width and the whole layout is linear in the output.
//! - A break in break mode emits a newline and `indent` spaces; in flat mode
//!   it emits its text. No trailing spaces are trimmed.

/// A handle to a node of a [`Docs`] arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocId(u32);

#[derive(Debug)]
enum Node {
    Nil,
    Text(String),
    Concat(Vec<DocId>),
    Brk(&'static str),
    Group(DocId),
    Nest(usize, DocId),
}

/// An arena of document nodes.
#[derive(Debug, Default)]
pub struct Docs {
    nodes: Vec<Node>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flat,
    Break,
}

impl Docs {
    /// An empty arena.
    pub fn new() -> Docs {
        Docs::default()
    }

    fn push(&mut self, n: Node) -> DocId {
        self.nodes.push(n);
        DocId((self.nodes.len() - 1) as u32)
    }

    /// The empty document.
    pub fn nil(&mut self) -> DocId {
        self.push(Node::Nil)
    }

    /// Literal text (must not contain newlines).
    pub fn text(&mut self, s: impl Into<String>) -> DocId {
        self.push(Node::Text(s.into()))
    }

    /// Documents one after the other.
    pub fn concat(&mut self, parts: Vec<DocId>) -> DocId {
        self.push(Node::Concat(parts))
    }

    /// A break printed as `text` when flat, as a newline when broken.
    pub fn brk(&mut self, text: &'static str) -> DocId {
        self.push(Node::Brk(text))
    }

    /// A group: flat if it fits, else broken.
    pub fn group(&mut self, child: DocId) -> DocId {
        self.push(Node::Group(child))
    }

    /// Increases the indentation of breaks inside `child` by `n`.
    pub fn nest(&mut self, n: usize, child: DocId) -> DocId {
        self.push(Node::Nest(n, child))
    }

    /// `parts` separated by copies of `sep`.
    pub fn join(&mut self, sep: DocId, parts: Vec<DocId>) -> DocId {
        let mut out = Vec::with_capacity(parts.len() * 2);
        for (i, p) in parts.into_iter().enumerate() {
            if i > 0 {
                out.push(sep);
            }
            out.push(p);
        }
        self.concat(out)
    }

    fn fits(&self, doc: DocId, mut width: i64, stack: &mut Vec<DocId>) -> bool {
        stack.clear();
        stack.push(doc);
        while width >= 0 {
            let Some(d) = stack.pop() else { break };
            match &self.nodes[d.0 as usize] {
                Node::Nil => {}
                Node::Text(s) => width -= s.len() as i64,
                Node::Brk(s) => width -= s.len() as i64,
                Node::Concat(ch) => stack.extend(ch.iter().rev()),
                Node::Group(c) | Node::Nest(_, c) => stack.push(*c),
            }
        }
        width >= 0
    }

    /// Lays `root` out within `width` columns.
    pub fn format(&self, root: DocId, width: usize) -> String {
        let mut out = String::new();
        let mut k: i64 = 0;
        let mut agenda: Vec<(usize, Mode, DocId)> = vec![(0, Mode::Break, root)];
        let mut scratch = Vec::new();
        while let Some((indent, mode, d)) = agenda.pop() {
            match &self.nodes[d.0 as usize] {
                Node::Nil => {}
                Node::Text(s) => {
                    out.push_str(s);
                    k += s.len() as i64;
                }
                Node::Concat(ch) => {
                    agenda.extend(ch.iter().rev().map(|c| (indent, mode, *c)));
                }
                Node::Brk(s) => {
                    if mode == Mode::Break {
                        out.push('\n');
                        for _ in 0..indent {
                            out.push(' ');
                        }
                        k = indent as i64;
                    } else {
                        out.push_str(s);
                        k += s.len() as i64;
                    }
                }
                Node::Group(c) => {
                    let flat = self.fits(*c, width as i64 - k, &mut scratch);
                    agenda.push((indent, if flat { Mode::Flat } else { Mode::Break }, *c));
                }
                Node::Nest(n, c) => agenda.push((indent + n, mode, *c)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(d: &mut Docs, ws: &[&str]) -> DocId {
        let parts: Vec<DocId> = ws.iter().map(|w| d.text(*w)).collect();
        let sep = d.brk(" ");
        d.join(sep, parts)
    }

    #[test]
    fn group_that_fits_is_flat() {
        let mut d = Docs::new();
        let w = words(&mut d, &["aaa", "bbb", "ccc"]);
        let g = d.group(w);
        assert_eq!(d.format(g, 11), "aaa bbb ccc");
        assert_eq!(d.format(g, 10), "aaa\nbbb\nccc");
    }

    #[test]
    fn breaks_outside_groups_break() {
        let mut d = Docs::new();
        let w = words(&mut d, &["x", "y"]);
        assert_eq!(d.format(w, 80), "x\ny");
    }

    #[test]
    fn nest_indents_broken_lines_and_inner_groups_decide_alone() {
        let mut d = Docs::new();
        let inner = words(&mut d, &["1", "2"]);
        let inner = d.group(inner);
        let a = d.text("head");
        let b = d.brk(" ");
        let long = d.text("a-very-long-tail");
        let body = d.concat(vec![a, b, inner, b, long]);
        let nested = d.nest(4, body);
        let g = d.group(nested);
        // The outer group does not fit in 20; the inner one does.
        assert_eq!(d.format(g, 20), "head\n    1 2\n    a-very-long-tail");
        assert_eq!(d.format(g, 80), "head 1 2 a-very-long-tail");
    }

    #[test]
    fn fits_only_looks_at_the_group_itself() {
        let mut d = Docs::new();
        let w = words(&mut d, &["ab", "cd"]);
        let g = d.group(w);
        let tail = d.text("0123456789");
        let doc = d.concat(vec![g, tail]);
        // The group fits in 6 columns even though the tail makes the line 15.
        assert_eq!(d.format(doc, 6), "ab cd0123456789");
    }
}
