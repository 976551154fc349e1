//! The ONNX Runtime rows: `ort` directly, and fastembed (which runs on `ort`), over the graph
//! `export_onnx.py` writes. ONNX Runtime is loaded at run time from `ORT_DYLIB_PATH` (the
//! `libonnxruntime.so` inside PyPI's `onnxruntime` wheel); the graph is read from `MINILM_ONNX`.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};
use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;

use crate::{Implementation, MAX_TOKENS, grouped, mean_pool, pad, tokenizer};

const THREADS: usize = 2;

fn session(env: &Environment, model: &Path) -> Result<Session, String> {
    Session::builder(env)
        .map_err(|e| e.to_string())?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(|e| e.to_string())?
        .with_intra_threads(THREADS)
        .map_err(|e| e.to_string())?
        .commit_from_file(model)
        .map_err(|e| e.to_string())
}

fn run(session: &mut Session, ids: &[Vec<u32>]) -> Vec<Vec<f32>> {
    let n = ids.len();
    let (len, flat, mask) = pad(ids);
    let shape = [n as i64, len as i64];
    let input: Vec<i64> = flat.iter().map(|&x| i64::from(x)).collect();
    let attention: Vec<i64> = mask.iter().map(|&m| m as i64).collect();
    let types = vec![0i64; n * len];
    let outputs = session
        .run(ort::inputs![
            "input_ids" => Tensor::from_array((shape, input)).unwrap(),
            "attention_mask" => Tensor::from_array((shape, attention)).unwrap(),
            "token_type_ids" => Tensor::from_array((shape, types)).unwrap(),
        ])
        .expect("runs");
    let (_, hidden) = outputs["last_hidden_state"]
        .try_extract_tensor::<f32>()
        .expect("a float tensor");
    mean_pool(hidden, &mask, n, len)
}

fn env_path(name: &str) -> Result<PathBuf, String> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("{name} is not set (see README.md)"))
}

/// `ort` on batches as given and grouped by length, and fastembed; or why not.
pub fn implementations(dir: &Path) -> Result<Vec<Implementation>, String> {
    let dylib = env_path("ORT_DYLIB_PATH")?;
    let model = env_path("MINILM_ONNX")?;
    let env = ort::init_from(&dylib)
        .map_err(|e| format!("{}: {e}", dylib.display()))?
        .build()
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for grouping in [false, true] {
        let tok = tokenizer(dir);
        let session = RefCell::new(session(&env, &model)?);
        out.push(Implementation {
            name: format!(
                "ort (ONNX Runtime){}",
                if grouping { ", grouped" } else { "" }
            ),
            run: Box::new(move |batch| {
                let ids: Vec<Vec<u32>> = batch.iter().map(|t| tok.encode(t, MAX_TOKENS)).collect();
                let mut session = session.borrow_mut();
                if grouping {
                    grouped(&ids, |g| run(&mut session, g))
                } else {
                    run(&mut session, &ids)
                }
            }),
        });
    }

    let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let files = TokenizerFiles {
        tokenizer_file: read("tokenizer.json")?,
        config_file: read("config.json")?,
        special_tokens_map_file: read("special_tokens_map.json")?,
        tokenizer_config_file: read("tokenizer_config.json")?,
    };
    let onnx = std::fs::read(&model).map_err(|e| format!("{}: {e}", model.display()))?;
    let user = UserDefinedEmbeddingModel::new(onnx, files).with_pooling(Pooling::Mean);
    let options = InitOptionsUserDefined::new()
        .with_environment(env)
        .with_max_length(MAX_TOKENS)
        .with_intra_threads(THREADS);
    let embedder = TextEmbedding::try_new_from_user_defined(user, options)
        .map_err(|e| format!("fastembed: {e}"))?;
    let embedder = RefCell::new(embedder);
    out.push(Implementation {
        name: "fastembed (ort, its own tokenizer)".into(),
        run: Box::new(move |batch| {
            embedder
                .borrow_mut()
                .embed(batch, Some(batch.len()))
                .expect("embeds")
        }),
    });
    Ok(out)
}
