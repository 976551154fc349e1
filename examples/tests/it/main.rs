//! The integration tests of the example agents, built as one binary: one link instead of one per
//! file, which keeps the workspace's test build small. Most drive the real binaries as a user runs
//! them; `support` finds the local model server and the peer proxy the end-to-end tests talk to.

mod support;

mod app_cli;
mod catalog;
mod conformance;
mod e2e_graph;
mod e2e_peer;
mod e2e_research_cli;
mod graph;
mod graph_batch;
mod graph_feed;
mod graph_mcp;
mod graph_model;
mod graph_resume;
mod graph_search;
mod graph_similarity;
mod graph_tools;
mod replicas_killed;
mod research;
mod research_cli;
mod research_external;
mod research_runs;
mod research_serve;
mod research_stand_ins;
mod runs_retention;
mod serve_mcp_servers;
mod tasks;
mod telemetry;
mod tools_cli;
mod tools_gateway;
mod tools_hostile;
mod tools_mcp_config;
mod tools_mcp_pins;
