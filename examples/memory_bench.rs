//! `memory_search` latency over 1k, 10k and 100k stored memories, and the database size
//! on disk: the budget "search p99 ≤ 10 ms at 100k" (stretch 3 ms), measured through the
//! library exactly as the gateway calls it (`Db::memory_store`, `FtsQuery`,
//! `Db::memory_search`) on a file database with the default page cache.
//!
//! Memories are synthetic but shaped like real ones: 6–40 words drawn from a Zipf-like
//! vocabulary (English stop words first, then ~250 common English words, then 20,000
//! rarer made-up words), so a few words are in a large share of all memories, as in a
//! real store. Queries are user messages: a set of hand-written ones and sentences drawn
//! from the same distribution. Two lookups are timed per message: the `memory_search`
//! tool (`FtsQuery::from_text`, 5 results) and the prompt's memory section exactly as the
//! agent builds it (`memory::inject::section` with the default `memory` settings, in one
//! read transaction: the keywords' best matches, their relevance, then core memories).
//!
//! Usage: `memory_bench [--sizes 1000,10000,100000] [--queries 300] [--dir DIR] [--keep]`
//! (`--keep` keeps the database, and a kept one in `--dir` is reused).
//! Prints a table and one `BENCH-MEM key=value …` line.
//!
//! # Bounds
//! At most `MAX_MEMORIES` (100,000) entries, the store's own limit.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use yoctoclaw::config::MemoryConfig;
use yoctoclaw::memory::inject;
use yoctoclaw::store::Db;
use yoctoclaw::store::fts_query::FtsQuery;
use yoctoclaw::store::memory::{Category, MAX_MEMORIES};

/// "Now" for the prompt section's ages (after every stored memory).
const NOW: i64 = 1_800_000_000;

const STOP: &[&str] = &[
    "the", "to", "and", "a", "of", "i", "is", "it", "you", "that", "in", "my", "for", "on", "was",
    "me", "with", "have", "this", "be", "at", "so", "but", "not", "what", "we", "are", "do",
    "about", "from", "can", "just", "your", "all", "will", "there", "when", "how", "if", "or",
    "an", "they", "he", "she", "her", "his", "them", "our", "by", "up", "no", "would",
];

const COMMON: &[&str] = &[
    "time",
    "day",
    "today",
    "tomorrow",
    "week",
    "work",
    "home",
    "need",
    "want",
    "like",
    "good",
    "new",
    "call",
    "meeting",
    "remind",
    "dinner",
    "email",
    "phone",
    "car",
    "house",
    "garden",
    "mom",
    "dad",
    "kids",
    "school",
    "doctor",
    "appointment",
    "buy",
    "store",
    "food",
    "coffee",
    "tea",
    "book",
    "read",
    "movie",
    "music",
    "run",
    "walk",
    "gym",
    "project",
    "code",
    "server",
    "bug",
    "fix",
    "plan",
    "trip",
    "flight",
    "hotel",
    "money",
    "bank",
    "pay",
    "bill",
    "rent",
    "birthday",
    "gift",
    "party",
    "friend",
    "weekend",
    "morning",
    "evening",
    "night",
    "lunch",
    "breakfast",
    "recipe",
    "cook",
    "clean",
    "laundry",
    "water",
    "plants",
    "dog",
    "cat",
    "vet",
    "train",
    "bus",
    "ticket",
    "password",
    "account",
    "update",
    "install",
    "board",
    "sensor",
    "temperature",
    "battery",
    "weather",
    "rain",
    "sun",
    "cold",
    "hot",
    "note",
    "list",
    "idea",
    "task",
    "done",
    "later",
    "soon",
    "next",
    "last",
    "year",
    "month",
    "hour",
    "minute",
    "sister",
    "brother",
    "wife",
    "husband",
    "office",
    "boss",
    "team",
    "client",
    "report",
    "deadline",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "march",
    "april",
    "summer",
    "winter",
    "holiday",
    "beach",
    "mountain",
    "bike",
    "shoes",
    "shirt",
    "jacket",
    "kitchen",
    "bathroom",
    "bedroom",
    "window",
    "door",
    "light",
    "heating",
    "internet",
    "wifi",
    "router",
    "laptop",
    "printer",
    "photo",
    "video",
    "game",
    "football",
    "tennis",
    "swim",
    "doctor",
    "dentist",
    "pharmacy",
    "medicine",
    "allergy",
    "sleep",
    "tired",
    "happy",
    "busy",
    "quick",
    "important",
    "favourite",
    "prefer",
    "likes",
    "hates",
    "always",
    "never",
    "usually",
    "every",
    "before",
    "after",
    "again",
    "still",
    "already",
    "family",
    "garage",
    "tools",
    "paint",
    "wall",
    "floor",
    "chair",
    "table",
    "sofa",
    "garden",
    "tomatoes",
    "roses",
    "lawn",
    "fence",
    "neighbour",
    "street",
    "city",
    "town",
    "village",
    "station",
    "airport",
    "passport",
    "visa",
    "insurance",
    "tax",
    "invoice",
    "salary",
    "budget",
    "savings",
    "groceries",
    "milk",
    "bread",
    "eggs",
    "cheese",
    "apples",
    "pasta",
    "rice",
    "soup",
    "salad",
    "wine",
    "beer",
    "water",
    "juice",
    "chocolate",
    "cake",
    "pizza",
    "restaurant",
    "cafe",
    "concert",
    "theatre",
    "museum",
    "park",
    "lake",
    "river",
    "forest",
    "hiking",
    "camping",
];

const HAND_QUERIES: &[&str] = &[
    "What did I tell you about the dentist appointment next week?",
    "remind me to call mom tomorrow morning",
    "how is the garden doing, did I water the plants today?",
    "What's my wifi password again",
    "Do you remember which restaurant we liked for my sister's birthday?",
    "what should I cook for dinner tonight, something with pasta",
    "When is the car insurance due?",
    "list the things I need to buy at the store this weekend",
    "did the server project deadline move to friday or monday",
    "I'm tired, what time did I go to sleep last night?",
    "what is the temperature sensor on the board reading",
    "tell me about my favourite books",
    "the",
    "what is it",
    "time",
    "I need to pay the rent and the bills before the end of the month",
];

/// xorshift64*: a tiny deterministic PRNG.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The vocabulary by rank and its cumulative Zipf weights (exponent 1.05).
struct Vocab {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Vocab {
    fn new(rng: &mut Rng) -> Vocab {
        const SYL: &[&str] = &[
            "ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "an", "ti", "mor", "gal", "pe",
            "ri", "zun", "bo", "cha", "el", "fin", "gu", "ho", "ja", "ku", "lin", "ma", "nor",
            "os", "pra", "qui", "st", "tra", "ul", "ven", "wi", "xa", "yor", "zel",
        ];
        let mut words: Vec<String> = STOP.iter().chain(COMMON).map(|s| s.to_string()).collect();
        while words.len() < 20_000 + STOP.len() + COMMON.len() {
            let n = 2 + rng.below(3);
            let w: String = (0..n)
                .map(|_| SYL[rng.below(SYL.len() as u64) as usize])
                .collect();
            words.push(w);
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|r| {
                total += 1.0 / (r as f64).powf(1.05);
                total
            })
            .collect();
        Vocab { words, cumulative }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let last = *self.cumulative.last().unwrap_or(&1.0);
        let x = rng.unit() * last;
        let i = self.cumulative.partition_point(|&c| c < x);
        &self.words[i.min(self.words.len() - 1)]
    }

    fn sentence(&self, rng: &mut Rng, min: u64, max: u64) -> String {
        let n = min + rng.below(max - min + 1);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(self.word(rng));
        }
        s
    }
}

struct Opts {
    sizes: Vec<u64>,
    queries: usize,
    dir: PathBuf,
    keep: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        sizes: vec![1_000, 10_000, 100_000],
        queries: 300,
        dir: std::env::temp_dir().join(format!("yc-membench-{}", std::process::id())),
        keep: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--keep" {
            o.keep = true;
            continue;
        }
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--sizes" => {
                o.sizes = v
                    .split(',')
                    .filter_map(|s| s.trim().parse().ok())
                    .map(|n: u64| n.min(MAX_MEMORIES))
                    .collect()
            }
            "--queries" => o.queries = v.parse().unwrap_or(300),
            "--dir" => o.dir = PathBuf::from(v),
            _ => {
                eprintln!(
                    "usage: memory_bench [--sizes 1000,10000,100000] [--queries 300] [--dir DIR] [--keep]"
                );
                std::process::exit(2);
            }
        }
    }
    o.sizes.sort_unstable();
    o
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Nanoseconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`): the search's own
/// cost, without the time a busy machine spent on other work.
fn cpu_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (ts.tv_sec.max(0) as u64) * 1_000_000_000 + ts.tv_nsec.max(0) as u64
}

fn file_len(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn main() {
    let o = opts();
    if !o.keep {
        let _ = std::fs::remove_dir_all(&o.dir);
    }
    if let Err(e) = std::fs::create_dir_all(&o.dir) {
        eprintln!("memory_bench: cannot create {}: {e}", o.dir.display());
        std::process::exit(1);
    }
    let path = o.dir.join("yoctoclaw.db");
    let db = match Db::open(&path, yoctoclaw::limits::DB_CACHE_KIB as u64) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("memory_bench: {e}");
            std::process::exit(1);
        }
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let vocab = Vocab::new(&mut rng);
    let mut queries: Vec<String> = HAND_QUERIES.iter().map(|s| s.to_string()).collect();
    while queries.len() < o.queries.max(HAND_QUERIES.len()) {
        queries.push(vocab.sentence(&mut rng, 4, 18));
    }
    println!(
        "memory_search latency (file DB, page cache {} KiB, {} user messages, 2 searches each)",
        yoctoclaw::limits::DB_CACHE_KIB,
        queries.len()
    );
    println!(
        "  {:>8} {:>10} {:>22} {:>22} {:>16} {:>10}",
        "entries",
        "insert s",
        "tool p50/p99/max ms",
        "prompt p50/p99/max ms",
        "CPU p50/p99 ms",
        "DB MiB"
    );
    // A database kept by an earlier `--keep` run is reused (profiling the searches alone).
    let mut stored = db.memory_total().unwrap_or(0);
    let mut bench = String::from("BENCH-MEM");
    for &size in &o.sizes {
        let t = Instant::now();
        let _ = db.conn.execute_batch("BEGIN");
        while stored < size {
            let text = vocab.sentence(&mut rng, 6, 40);
            let key: String = text
                .split(' ')
                .filter(|w| !STOP.contains(w))
                .take(2)
                .collect::<Vec<_>>()
                .join("_");
            let key = format!("{key}_{stored}");
            let cat = Category::ALL[(rng.below(10) as usize).min(3)];
            if let Err(e) = db.memory_store(&key, &text, cat, 1_700_000_000 + stored as i64) {
                eprintln!("memory_bench: store failed at {stored}: {e}");
                std::process::exit(1);
            }
            stored += 1;
            if stored.is_multiple_of(10_000) {
                let _ = db.conn.execute_batch("COMMIT; BEGIN");
            }
        }
        let _ = db.conn.execute_batch("COMMIT");
        let insert_s = t.elapsed().as_secs_f64();
        let _ = db.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
        // Warm up the page cache and the statement cache as a running gateway has them.
        for q in queries.iter().take(20) {
            if let Some(fq) = FtsQuery::from_text(q) {
                let _ = db.memory_search(&fq, None, 5);
            }
        }
        let mem_cfg = MemoryConfig::default();
        let mut tool = Vec::with_capacity(queries.len());
        let mut prompt = Vec::with_capacity(queries.len());
        let mut cpu = Vec::with_capacity(2 * queries.len());
        let mut worst = (Duration::ZERO, String::new());
        for q in &queries {
            if let Some(fq) = FtsQuery::from_text(q) {
                let c = cpu_ns();
                let t = Instant::now();
                let r = db.memory_search(&fq, None, 5);
                let d = t.elapsed();
                cpu.push(Duration::from_nanos(cpu_ns().saturating_sub(c)));
                if let Err(e) = r {
                    eprintln!("memory_bench: search {q:?} failed: {e}");
                    std::process::exit(1);
                }
                if d > worst.0 {
                    worst = (d, q.clone());
                }
                tool.push(d);
            }
            {
                let c = cpu_ns();
                let t = Instant::now();
                let _ = db.read_batch(|| inject::section(&db, &mem_cfg, q, NOW));
                let d = t.elapsed();
                cpu.push(Duration::from_nanos(cpu_ns().saturating_sub(c)));
                if d > worst.0 {
                    worst = (d, q.clone());
                }
                prompt.push(d);
            }
        }
        tool.sort();
        prompt.sort();
        cpu.sort();
        let db_bytes = file_len(&path) + file_len(&o.dir.join("yoctoclaw.db-wal"));
        println!(
            "  {:>8} {:>10.2} {:>22} {:>22} {:>16} {:>10.2}",
            size,
            insert_s,
            format!(
                "{:.2}/{:.2}/{:.2}",
                pct(&tool, 0.5),
                pct(&tool, 0.99),
                pct(&tool, 1.0)
            ),
            format!(
                "{:.2}/{:.2}/{:.2}",
                pct(&prompt, 0.5),
                pct(&prompt, 0.99),
                pct(&prompt, 1.0)
            ),
            format!("{:.2}/{:.2}", pct(&cpu, 0.5), pct(&cpu, 0.99)),
            db_bytes as f64 / (1024.0 * 1024.0)
        );
        println!(
            "           slowest: {:.2} ms for {:?}",
            worst.0.as_secs_f64() * 1000.0,
            worst.1
        );
        bench.push_str(&format!(
            " n{size}_tool_p50_ms={:.2} n{size}_tool_p99_ms={:.2} n{size}_prompt_p50_ms={:.2} n{size}_prompt_p99_ms={:.2} n{size}_cpu_p99_ms={:.2} n{size}_db_bytes={db_bytes}",
            pct(&tool, 0.5), pct(&tool, 0.99), pct(&prompt, 0.5), pct(&prompt, 0.99), pct(&cpu, 0.99)
        ));
    }
    println!("{bench}");
    drop(db);
    if o.keep {
        println!("database kept at {}", path.display());
    } else {
        let _ = std::fs::remove_dir_all(&o.dir);
    }
}
