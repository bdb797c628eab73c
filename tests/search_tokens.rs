//! The token estimate `auto` deferral decides by stays within ±15 % of a
//! real tokenizer's count on the fixture's 660 real tool definitions, as
//! `tools/list` sends them: over the whole catalog and for every server
//! of at least ten tools (a whole server is what one connection adds).

use toolgate::mcp::convert::McpTool;
use toolgate::search::tokens;

use crate::common::catalog;

#[test]
fn the_estimate_is_within_fifteen_percent_of_openais_tokenizers() {
    let catalog = catalog::load(&catalog::fixture("catalog.json"));
    let bpes = [
        ("o200k_base", tiktoken_rs::o200k_base().unwrap()),
        ("cl100k_base", tiktoken_rs::cl100k_base().unwrap()),
    ];
    for (bpe_name, bpe) in &bpes {
        let (mut all_est, mut all_real) = (0u64, 0u64);
        let mut worst = (0.0f64, String::new());
        for server in &catalog.servers {
            let defs = catalog::defs(&catalog::Catalog {
                servers: vec![catalog::Server {
                    name: server.name.clone(),
                    tools: server.tools.clone(),
                }],
            });
            let (mut est, mut real) = (0u64, 0u64);
            for d in &defs {
                let json = serde_json::to_string(&McpTool::from(d)).unwrap();
                est += u64::from(tokens::estimate(d));
                real += bpe.encode_ordinary(&json).len() as u64;
            }
            all_est += est;
            all_real += real;
            let off = est as f64 / real as f64 - 1.0;
            if defs.len() >= 10 && off.abs() > worst.0.abs() {
                worst = (off, server.name.clone());
            }
        }
        let off = all_est as f64 / all_real as f64 - 1.0;
        eprintln!(
            "{bpe_name}: estimate {all_est} tokens, real {all_real} ({:+.1} %); worst server {} ({:+.1} %)",
            off * 100.0,
            worst.1,
            worst.0 * 100.0
        );
        assert!(
            off.abs() <= 0.15,
            "{bpe_name}: {:+.1} % over the catalog",
            off * 100.0
        );
        assert!(
            worst.0.abs() <= 0.15,
            "{bpe_name}: {} is {:+.1} % off",
            worst.1,
            worst.0 * 100.0
        );
    }
}
