//! The buddy tree of a mesh, built once and shared by every copy of the
//! allocator.
//!
//! M2DB's buddy generation (SDSC seed 2.4.2) is a pure function of a
//! block's shape, so every block the allocator can ever make is known in
//! advance: the whole mesh, its buddies, theirs, down to single nodes. We
//! build that tree once, in pre-order (a block's subtree is the index range
//! `t..end[t]`), and the allocator keeps only a state byte per block. The
//! blocks are grouped by area ("size classes", smallest first) so the free
//! ones can be found by size without a search over the mesh.

/// A rectangle of the mesh: upper-left node `(x, y)`, `w` wide, `h` high.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    pub fn area(self) -> u32 {
        self.w * self.h
    }

    pub fn contains(self, x: u32, y: u32) -> bool {
        x >= self.x && x < self.x + self.w && y >= self.y && y < self.y + self.h
    }
}

/// The buddies a block splits into, with the number of the seed's case
/// (1 to 6) that made them; a single node does not split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buddies {
    pub case: u8,
    parts: [Rect; 4],
    len: u8,
}

impl Buddies {
    pub fn parts(&self) -> &[Rect] {
        &self.parts[..self.len as usize]
    }
}

fn pow2_at_most(v: u32) -> u32 {
    1 << (31 - v.leading_zeros())
}

/// The seed's buddy generation: W2, H2 are the largest powers of two not
/// above `w` and `h`. Buddies are listed in the seed's order (upper left,
/// upper right, lower right, lower left). The seed's case 2 prints `2`
/// for the first buddy's width where `W2` is meant, and its case 6 says
/// `h != w`, which would leave a square like 3×3 without a case; we read
/// case 6 as "neither side a power of two".
pub fn buddies(r: Rect) -> Option<Buddies> {
    let (w2, h2) = (pow2_at_most(r.w), pow2_at_most(r.h));
    let Rect { x, y, w, h } = r;
    let rect = |x, y, w, h| Rect { x, y, w, h };
    let none = rect(0, 0, 0, 0);
    let two = |case, a, b| Buddies {
        case,
        parts: [a, b, none, none],
        len: 2,
    };
    let four = |case, parts| Buddies {
        case,
        parts,
        len: 4,
    };
    if w == 1 && h == 1 {
        return None;
    }
    Some(match (w == w2, h == h2) {
        (true, true) if w == h => {
            let (hw, hh) = (w2 / 2, h2 / 2);
            four(
                1,
                [
                    rect(x, y, hw, hh),
                    rect(x + hw, y, hw, hh),
                    rect(x + hw, y + hh, hw, hh),
                    rect(x, y + hh, hw, hh),
                ],
            )
        }
        (true, true) if h > w => two(2, rect(x, y, w2, h2 / 2), rect(x, y + h2 / 2, w2, h2 / 2)),
        (true, true) => two(3, rect(x, y, w2 / 2, h2), rect(x + w2 / 2, y, w2 / 2, h2)),
        (false, true) => two(4, rect(x, y, w2, h2), rect(x + w2, y, w - w2, h2)),
        (true, false) => two(5, rect(x, y, w2, h2), rect(x, y + h2, w2, h - h2)),
        (false, false) => four(
            6,
            [
                rect(x, y, w2, h2),
                rect(x + w2, y, w - w2, h2),
                rect(x + w2, y + h2, w - w2, h - h2),
                rect(x, y + h2, w2, h - h2),
            ],
        ),
    })
}

/// No parent (the root).
pub const NONE: u32 = u32::MAX;

/// How the contiguous mode splits: as the seed, except that a power-of-two
/// square splits first into two halves side by side (which then split as
/// case 2 into the seed's four quarters). Without that level a square mesh
/// would hold no rectangle of 2, 8, 32, … nodes, and a one-rectangle
/// allocator could not serve those requests at all.
pub fn halving_buddies(r: Rect) -> Option<Buddies> {
    let b = buddies(r)?;
    if b.case != 1 {
        return Some(b);
    }
    let half = r.w / 2;
    let left = Rect { w: half, ..r };
    let right = Rect {
        x: r.x + half,
        w: half,
        ..r
    };
    Some(Buddies {
        case: 3,
        parts: [left, right, left, left],
        len: 2,
    })
}

/// Every block of the mesh's buddy tree, in pre-order.
#[derive(Debug, PartialEq, Eq)]
pub struct Tree {
    pub width: u32,
    pub height: u32,
    pub rect: Vec<Rect>,
    pub parent: Vec<u32>,
    /// Children (up to four; `NONE` past the last).
    pub children: Vec<[u32; 4]>,
    /// One past the last block of the subtree.
    pub end: Vec<u32>,
    /// The single-node block of each node (`y * width + x`).
    pub leaf_of: Vec<u32>,
    /// Size class of each block, and its rank among that class's blocks.
    pub class_of: Vec<u16>,
    pub rank: Vec<u32>,
    /// Per class, smallest area first: the area, its blocks in pre-order,
    /// and where its words start in a bitmap over its blocks.
    pub class_area: Vec<u32>,
    pub class_members: Vec<Vec<u32>>,
    pub class_word: Vec<u32>,
}

impl Tree {
    /// The tree of a `width × height` mesh; `halving` for the contiguous
    /// mode (see [`halving_buddies`]).
    pub fn new(width: u32, height: u32, halving: bool) -> Tree {
        let mut tree = Tree {
            width,
            height,
            rect: Vec::new(),
            parent: Vec::new(),
            children: Vec::new(),
            end: Vec::new(),
            leaf_of: vec![NONE; (width * height) as usize],
            class_of: Vec::new(),
            rank: Vec::new(),
            class_area: Vec::new(),
            class_members: Vec::new(),
            class_word: Vec::new(),
        };
        tree.build(
            Rect {
                x: 0,
                y: 0,
                w: width,
                h: height,
            },
            NONE,
            if halving { halving_buddies } else { buddies },
        );
        let mut areas: Vec<u32> = tree.rect.iter().map(|r| r.area()).collect();
        areas.sort_unstable();
        areas.dedup();
        tree.class_members = vec![Vec::new(); areas.len()];
        for (t, r) in tree.rect.iter().enumerate() {
            let c = areas.partition_point(|&a| a < r.area());
            tree.class_of.push(c as u16);
            tree.rank.push(tree.class_members[c].len() as u32);
            tree.class_members[c].push(t as u32);
        }
        let mut word = 0;
        for members in &tree.class_members {
            tree.class_word.push(word);
            word += members.len().div_ceil(64) as u32;
        }
        tree.class_word.push(word);
        tree.class_area = areas;
        tree
    }

    fn build(&mut self, r: Rect, parent: u32, split: fn(Rect) -> Option<Buddies>) -> u32 {
        let t = self.rect.len() as u32;
        self.rect.push(r);
        self.parent.push(parent);
        self.children.push([NONE; 4]);
        self.end.push(NONE);
        match split(r) {
            None => self.leaf_of[(r.y * self.width + r.x) as usize] = t,
            Some(b) => {
                for (i, &part) in b.parts().iter().enumerate() {
                    let c = self.build(part, t, split);
                    self.children[t as usize][i] = c;
                }
            }
        }
        self.end[t as usize] = self.rect.len() as u32;
        t
    }

    pub fn len(&self) -> usize {
        self.rect.len()
    }

    pub fn kids(&self, t: u32) -> impl Iterator<Item = u32> + '_ {
        self.children[t as usize]
            .iter()
            .copied()
            .take_while(|&c| c != NONE)
    }

    /// The first class whose area is at least `n`.
    pub fn class_at_least(&self, n: u32) -> usize {
        self.class_area.partition_point(|&a| a < n)
    }

    /// The class of exactly `n` nodes, if any block has that area.
    pub fn class_exactly(&self, n: u32) -> Option<usize> {
        let c = self.class_at_least(n);
        (self.class_area.get(c) == Some(&n)).then_some(c)
    }
}
