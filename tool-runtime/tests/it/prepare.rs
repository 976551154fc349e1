//! `ToolSet::prepare`: typed tools' registration work done ahead, over several threads, with
//! registration afterwards behaving exactly as without it.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use tool_runtime::{
    CallContext, Tool, ToolCall, ToolError, ToolSet,
    definition::ToolDefinition,
    toolset::{Prepare, RegistrationError},
};

use common::{SearchArgs, VALID, definition_once, derived_definition};

/// Which thread derived each tool's definition.
static DERIVED_ON: LazyLock<Mutex<HashMap<usize, ThreadId>>> = LazyLock::new(Default::default);
/// Tool `N` of many; tool 13's name is invalid, tool 1000 panics while defining itself.
struct Many<const N: usize>;

impl<const N: usize> Tool for Many<N> {
    type Args = SearchArgs;
    type Output = u32;

    fn definition() -> &'static ToolDefinition {
        definition_once::<Self>(|| {
            assert!(N != 1000, "tool {N} cannot define itself");
            // slow enough that every preparing thread gets some of the work
            std::thread::sleep(Duration::from_millis(2));
            let name: &'static str = if N == 13 {
                "not a valid name"
            } else {
                Box::leak(format!("many_{N}").into_boxed_str())
            };
            DERIVED_ON
                .lock()
                .unwrap()
                .insert(N, std::thread::current().id());
            derived_definition::<SearchArgs>(name, "One of many.")
        })
    }

    async fn call(args: SearchArgs, _cx: &CallContext) -> Result<u32, ToolError> {
        Ok(args.limit)
    }
}

macro_rules! many {
    ($($n:literal)*) => { [$(Prepare::of::<Many<$n>>()),*] };
}

const PREPARED: [Prepare; 40] = many!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19
    20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39
);

#[test]
fn prepared_tools_register_as_without_preparation_and_errors_come_from_register() {
    ToolSet::prepare(&PREPARED);
    // (the other test's tools are numbered from 100)
    let derived: HashMap<usize, ThreadId> = DERIVED_ON
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| **n < 100)
        .map(|(n, t)| (*n, *t))
        .collect();
    assert_eq!(derived.len(), 40, "every tool was prepared");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: HashSet<_> = derived.values().collect();
    if cores > 1 {
        assert!(
            threads.len() > 1,
            "{cores} cores, but one thread did all the work"
        );
    } else {
        assert_eq!(threads.len(), 1);
    }

    let mut set = ToolSet::new();
    set.register::<Many<0>>().unwrap();
    set.register::<Many<39>>().unwrap();
    // tool 13's name is refused at its registration, as it would be unprepared
    assert!(matches!(
        set.register::<Many<13>>(),
        Err(RegistrationError::InvalidName(name)) if name == "not a valid name"
    ));
    assert_eq!(set.len(), 2);
    assert!(set.has_fast_path("many_39"));
    let instance = set.hydrate(&ToolCall::new("c", "many_39", VALID)).unwrap();
    assert_eq!(instance.name(), "many_39");
    assert!(
        set.hydrate(&ToolCall::new("c", "many_0", r#"{"query": ""}"#))
            .is_err()
    );
}

#[test]
fn a_panic_while_preparing_reaches_the_caller_with_its_message() {
    let mut tools: Vec<Prepare> = many!(
        100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115
        116 117 118 119 120 121 122 123 124 125 126 127 128 129 130 131
    )
    .to_vec();
    tools.insert(20, Prepare::of::<Many<1000>>());
    let payload = std::panic::catch_unwind(|| ToolSet::prepare(&tools)).unwrap_err();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert_eq!(message, "tool 1000 cannot define itself");
}
