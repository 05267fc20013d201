//! From pick to ready: a 1 GiB file through the page and the widget, which
//! start sending at once and hash beside it, against the longer of what
//! each does alone in the same browser: the bare `PUT` of the file into
//! sluice's own upload link (a server that hashes and writes every byte, as
//! the page's upload does) and the form's own hasher on the file, nothing
//! sent. Rounds interleaved, medians.

use crate::browser::{seconds, through_page, through_widget, widget_sluice};
use crate::harness::median;
use crate::kit::make_file;

/// The form's time from the pick to ready: its own `totalMs`, or, for a
/// build before it hashed beside sending (`SLUICE_BENCH_SERVER`), its hash
/// and its upload, which ran one after the other (the start between them,
/// a few milliseconds, left out).
fn pick_to_ready(v: &serde_json::Value) -> anyhow::Result<f64> {
    if v.get("totalMs").is_some() {
        return seconds(v, "totalMs");
    }
    Ok(seconds(v, "hashMs")? + seconds(v, "uploadMs")?)
}

/// One form's rounds: pick to ready, its hasher alone, and (the page's
/// runs only) the bare PUT.
#[derive(Default)]
struct Form {
    total: Vec<f64>,
    hash_alone: Vec<f64>,
}

pub fn run(runs: usize) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let (sluice, port) = widget_sluice(work.path())?;
    let mib = 1u64 << 20;
    let size = 1024 * mib;
    let file = work.path().join("pick-1g.bin");
    eprintln!("pick: writing a 1 GiB file…");
    let sha = make_file(&file, size)?;
    let (mut page, mut widget, mut bare) = (Form::default(), Form::default(), Vec::new());
    for round in 1..=runs {
        eprintln!("pick: round {round} of {runs}…");
        let sink = sluice.upload_link(&format!("bare-{round}.bin"), size, &sha)?;
        let v = through_page(&sluice, &file, Some(&sink))?;
        page.total.push(pick_to_ready(&v)?);
        page.hash_alone.push(seconds(&v, "hashAloneMs")?);
        bare.push(seconds(&v, "sinkMs")?);
        let w = through_widget(&sluice, &file, port)?;
        widget.total.push(pick_to_ready(&w)?);
        widget.hash_alone.push(seconds(&w, "hashAloneMs")?);
    }
    drop(sluice);
    Ok(report(page, widget, bare, runs))
}

fn report(page: Form, widget: Form, bare: Vec<f64>, runs: usize) -> String {
    let bare = median(bare);
    let mut out = String::from(
        "\n## From pick to ready: a 1 GiB file through the page and the widget (local mode, issue 70)\n\n",
    );
    out.push_str(&format!(
        "`target/fast/sluice-bench --only pick --runs {runs}`: Debian's Chromium driven by \
         playwright-core; each round the page (`tests/clients/bench-browser.mjs`) and the widget \
         (in the MCP Apps host, `tests/clients/apps-host.mjs`) upload the same 1 GiB file, timed \
         by the form itself from the pick to ready (`totalMs`: its start, the upload, and the \
         digest declared with the last bytes); then the form's own hasher on the file alone \
         (`hashAloneMs`, nothing sent), and the same Chromium's bare `PUT` of the file into a \
         fresh upload link of sluice's (which hashes and writes every byte, as the page's upload \
         does). Medians of {runs} rounds.\n\n"
    ));
    out.push_str(
        "| form | pick to ready s | its hasher alone s | bare PUT s | pick to ready / the longer | rate / bare PUT |\n\
         |---|---|---|---|---|---|\n",
    );
    for (name, form) in [("page", page), ("widget", widget)] {
        let (total, alone) = (median(form.total), median(form.hash_alone));
        let longer = alone.max(bare);
        out.push_str(&format!(
            "| {name} | {total:.2} | {alone:.2} | {bare:.2} | **{:.2}** (target ≤ 1.15: {}) | **{:.2}** (target ≥ 0.9: {}) |\n",
            total / longer,
            if total / longer <= 1.15 { "met" } else { "missed" },
            bare / total,
            if bare / total >= 0.9 { "met" } else { "missed" },
        ));
    }
    out
}
