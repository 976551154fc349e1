//! What the MCP client and the gateway cost.
//!
//! - `gateway/direct` and `gateway/through`: one call of the reference everything server's
//!   `echo` (node, over stdio), made by this crate's client straight to the server, and the
//!   same call made to `tools gateway --stdio` (a child process: this benchmark started again
//!   as the gateway) in front of the same server. Both are read-only, so neither waits for a
//!   person; the gateway's executor validates, checks the policy and audits in its store
//!   (SQLite) as it does for every call. Both executors' result caches are off, so every call
//!   reaches the server. The difference is what the gateway adds. `gateway/through_memory_store`
//!   is the same gateway with its store in memory: what recording each call in SQLite costs.
//!   `gateway/interleaved` times each call alone, the three in turn, and prints their p50, p90
//!   and p99 and what the gateway adds at p50. The gateway runs as the `tools` binary runs it:
//!   its arguments parsed and run by `Cli::run_from_env` (tokio's current-thread runtime), with
//!   a log subscriber on standard error at `warn` (or `RUST_LOG`).
//!   `TOOL_MCP_BENCH_RUNTIME=multi_thread` runs the same command on tokio's multi-thread runtime
//!   instead, as an application that serves it from its own multi-thread `main` would.
//! - `register/import_1000`: the 1,000 tools a server listed imported into a `ToolSet`
//!   (names, categories, the injection check, each input schema compiled as its validator),
//!   beside `register/jsonschema_1000`, the same 1,000 schemas compiled with `jsonschema` alone.
//!
//! Needs `TOOLS_MCP_SERVERS` (the npm reference servers) and `TOOLS_CONFORMANCE_PYTHON` (a
//! Python with the MCP SDK); a group whose server is missing is skipped, saying so.
//!
//! ```text
//! cargo bench -p tool-mcp --bench gateway
//! ```

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use serde_json::json;
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::cli::{Cli, Output};
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Executor, ExecutorConfig};
use tool_runtime::{CallContext, ToolCall, ToolSet};
use tool_server::gateway::GatewayCommand;

/// Set in the gateway's environment: this process is then the gateway, started with the
/// arguments of `tools gateway`, not the benchmark.
const GATEWAY: &str = "TOOL_MCP_BENCH_GATEWAY";

fn main() {
    if std::env::var_os(GATEWAY).is_some() {
        std::process::exit(serve_gateway());
    }
    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    gateway(&mut c);
    registration(&mut c);
    c.final_summary();
}

/// `tools gateway --stdio --config CONFIG` (this process's arguments), as a host starts it and
/// as the `tools` binary runs it: a log subscriber like the examples' (standard error, `warn`
/// unless `RUST_LOG` says otherwise), and the command line run by `Cli::run_from_env`.
fn serve_gateway() -> i32 {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    tracing_subscriber::registry().with(log).init();
    let cli = Cli::new(ToolSet::new()).with(GatewayCommand::new());
    if std::env::var("TOOL_MCP_BENCH_RUNTIME").as_deref() != Ok("multi_thread") {
        return cli.run_from_env().code();
    }
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
        };
        cli.run(std::env::args_os(), &mut output).await.code()
    })
}

fn everything() -> Option<String> {
    let modules = std::env::var("TOOLS_MCP_SERVERS").ok()?;
    let script = format!("{modules}/@modelcontextprotocol/server-everything/dist/index.js");
    Path::new(&script).is_file().then_some(script)
}

/// `config` with `tool` read-only: a call runs at once, without a person.
fn read_only(mut config: ServerConfig, tool: &str) -> ServerConfig {
    config.categories.insert(tool.to_owned(), Safety::ReadOnly);
    config
}

/// The server's tools behind an executor with no store: what a host's own agent would run.
async fn connected(name: &str, config: ServerConfig) -> (McpClient, Executor) {
    let client = McpClient::connect(name, config).await.expect("connected");
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(imported.refused.is_empty(), "{imported:?}");
    // every call is measured to the server and back: no cached result answers it
    let mut config = ExecutorConfig::default();
    config.cache.enabled = false;
    let exec = Executor::builder(set)
        .config(config)
        .build()
        .expect("an executor");
    (client, exec)
}

fn gateway(c: &mut Criterion) {
    let Some(script) = everything() else {
        eprintln!("gateway: skipped, TOOLS_MCP_SERVERS has no server-everything");
        return;
    };
    let dir = tempfile::tempdir().expect("a folder");
    // the gateway as configured by default (its store a SQLite file), and with its store in
    // memory: the difference is what recording each call in the file costs
    let gateway_with = |store: String, file: &str| {
        let config_path = dir.path().join(file);
        let config = format!(
            "{store}\n\n[cache]\nenabled = false\n\n[mcp.servers.up]\ncommand = \"node\"\n\
             args = [{script:?}, \"stdio\"]\ncategories = {{ echo = \"read_only\" }}\n",
        );
        std::fs::write(&config_path, config).expect("written");
        let exe = std::env::current_exe().expect("this benchmark");
        let args = ["gateway", "--stdio", "--config", &path(&config_path)].map(str::to_owned);
        let mut through = ServerConfig::stdio(exe.display().to_string(), args);
        through.env.insert(GATEWAY.into(), "1".into());
        if let Ok(runtime) = std::env::var("TOOL_MCP_BENCH_RUNTIME") {
            through.env.insert("TOOL_MCP_BENCH_RUNTIME".into(), runtime);
        }
        read_only(through, "up__echo")
    };
    let sqlite = format!(
        "[store]\npath = {:?}",
        dir.path().join("gateway.sqlite3").display().to_string()
    );
    let through = gateway_with(sqlite, "gateway.toml");
    let in_memory = gateway_with("store = \"memory\"".into(), "gateway-memory.toml");
    let direct = read_only(
        ServerConfig::stdio("node", [script, "stdio".into()]),
        "echo",
    );

    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let (_direct, direct) = rt.block_on(connected("up", direct));
    let (_through, through) = rt.block_on(connected("gw", through));
    let (_in_memory, in_memory) = rt.block_on(connected("gw", in_memory));
    let run = |exec: &Executor, tool: &str| {
        let call = ToolCall::new("bench", tool, json!({"message": "hello"}));
        let done = rt.block_on(exec.call(&call, CallContext::new("bench")));
        assert!(done.outcome.is_success(), "{:?}", done.outcome);
        black_box(done);
    };
    // each answers once before it is measured
    run(&direct, "up__echo");
    run(&through, "gw__up__echo");
    run(&in_memory, "gw__up__echo");

    let mut group = c.benchmark_group("gateway");
    group.bench_function("direct", |b| b.iter(|| run(&direct, "up__echo")));
    group.bench_function("through", |b| b.iter(|| run(&through, "gw__up__echo")));
    group.bench_function("through_memory_store", |b| {
        b.iter(|| run(&in_memory, "gw__up__echo"))
    });
    // Each call timed alone, the three interleaved so that the machine's load falls on all of
    // them alike: the percentiles of a call (criterion's figures above are means of batches,
    // which a rare slow call moves). Criterion times the gateway's calls; all are kept.
    let per_call = std::cell::RefCell::new([Vec::new(), Vec::new(), Vec::new()]);
    group.bench_function("interleaved", |b| {
        b.iter_custom(|iters| {
            let mut kept = per_call.borrow_mut();
            let mut through_total = Duration::ZERO;
            for _ in 0..iters {
                for (i, (exec, tool)) in [
                    (&direct, "up__echo"),
                    (&through, "gw__up__echo"),
                    (&in_memory, "gw__up__echo"),
                ]
                .into_iter()
                .enumerate()
                {
                    let started = Instant::now();
                    run(exec, tool);
                    let took = started.elapsed();
                    kept[i].push(took);
                    if i == 1 {
                        through_total += took;
                    }
                }
            }
            through_total
        })
    });
    group.finish();
    let mut kept = per_call.into_inner();
    if !kept[0].is_empty() {
        for times in &mut kept {
            times.sort_unstable();
        }
        let at = |times: &[Duration], q: f64| {
            times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6
        };
        let direct_p50 = at(&kept[0], 0.5);
        println!(
            "gateway/interleaved: {} calls of each, one at a time",
            kept[0].len()
        );
        for (name, times) in ["direct", "through", "through_memory_store"]
            .into_iter()
            .zip(&kept)
        {
            println!(
                "  {name:<21} p50 {:>7.1} µs  p90 {:>7.1} µs  p99 {:>7.1} µs  added at p50: {:+.1} µs",
                at(times, 0.5),
                at(times, 0.9),
                at(times, 0.99),
                at(times, 0.5) - direct_p50,
            );
        }
    }
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn many_tools() -> Option<(String, PathBuf)> {
    let python = std::env::var("TOOLS_CONFORMANCE_PYTHON").ok()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/servers/many_tools.py");
    Some((python, script))
}

fn registration(c: &mut Criterion) {
    let Some((python, script)) = many_tools() else {
        eprintln!("register: skipped, TOOLS_CONFORMANCE_PYTHON is not set");
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let config = ServerConfig::stdio(python, [path(&script), "1000".into()]);
    let client = rt
        .block_on(McpClient::connect("many", config))
        .expect("connected");
    assert_eq!(client.tools().len(), 1000);
    let schemas: Vec<serde_json::Value> = (client.tools().iter())
        .map(|t| serde_json::Value::Object((*t.input_schema).clone()))
        .collect();

    let mut group = c.benchmark_group("register");
    group.sample_size(20);
    group.bench_function("import_1000", |b| {
        b.iter_batched(
            ToolSet::new,
            |mut set| {
                let imported = client.import(&mut set);
                assert_eq!(imported.registered.len(), 1000);
                set
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("jsonschema_1000", |b| {
        b.iter(|| {
            for schema in &schemas {
                black_box(jsonschema::validator_for(schema).expect("compiles"));
            }
        })
    });
    group.finish();
    client.close();
}
