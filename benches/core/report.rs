//! The printed table: one row per measurement with its target and verdict, the
//! correctness failures that make the run fail, notes, and the number formats.

pub struct Row {
    pub section: String,
    pub metric: String,
    pub value: String,
    pub target: String,
    /// `Some(true)` PASS, `Some(false)` MISS, `None` for information.
    pub pass: Option<bool>,
}

#[derive(Default)]
pub struct Report {
    pub rows: Vec<Row>,
    /// Correctness failures: lost, duplicated or reordered messages, sessions cut off.
    pub failures: Vec<String>,
    pub notes: Vec<String>,
}

impl Report {
    pub fn info(&mut self, section: &str, metric: &str, value: String) {
        self.row(section, metric, value, String::new(), None);
    }

    pub fn row(
        &mut self,
        section: &str,
        metric: &str,
        value: String,
        target: String,
        pass: Option<bool>,
    ) {
        self.rows.push(Row {
            section: section.into(),
            metric: metric.into(),
            value,
            target,
            pass,
        });
    }

    /// A correctness check: shown as a row, and a failure when it does not hold.
    pub fn check(&mut self, section: &str, metric: &str, value: String, target: &str, ok: bool) {
        if !ok {
            self.failures
                .push(format!("{section}: {metric}: {value} (want {target})"));
        }
        self.row(section, metric, value, target.into(), Some(ok));
    }

    pub fn print(&self) {
        let w_sec = self.rows.iter().map(|r| r.section.len()).max().unwrap_or(0);
        let w_met = self.rows.iter().map(|r| r.metric.len()).max().unwrap_or(0);
        let w_val = self.rows.iter().map(|r| r.value.len()).max().unwrap_or(0);
        let w_tgt = self.rows.iter().map(|r| r.target.len()).max().unwrap_or(0);
        let line = "-".repeat(w_sec + w_met + w_val + w_tgt + 16);
        println!("{line}");
        println!(
            "{:w_sec$}  {:w_met$}  {:>w_val$}  {:w_tgt$}  verdict",
            "section", "measurement", "measured", "target"
        );
        println!("{line}");
        let mut last = "";
        for r in &self.rows {
            let section = if r.section == last { "" } else { &r.section };
            last = &r.section;
            let verdict = match r.pass {
                Some(true) => "PASS",
                Some(false) => "MISS",
                None => "",
            };
            println!(
                "{section:w_sec$}  {:w_met$}  {:>w_val$}  {:w_tgt$}  {verdict}",
                r.metric, r.value, r.target
            );
        }
        println!("{line}");
        for note in &self.notes {
            println!("note: {note}");
        }
        let misses = self.rows.iter().filter(|r| r.pass == Some(false)).count();
        let passes = self.rows.iter().filter(|r| r.pass == Some(true)).count();
        println!(
            "{passes} PASS, {misses} MISS; correctness failures: {}",
            self.failures.len()
        );
        for f in &self.failures {
            println!("FAILED: {f}");
        }
    }
}

pub fn us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

pub fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

pub fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

pub fn bytes(n: u64) -> String {
    if n >= 1024 * 1024 {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    } else {
        format!("{:.0} kB", n as f64 / 1024.0)
    }
}

pub fn rate(per_s: f64) -> String {
    format!("{per_s:.0} msg/s")
}

/// The `q` quantile of sorted nanoseconds (nearest rank).
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
