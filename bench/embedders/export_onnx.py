"""Writes all-MiniLM-L6-v2 as an ONNX graph, built node by node from model.safetensors.

No PyPI package ships an fp32 ONNX export of the model, and PyTorch (which `torch.onnx.export`
needs) does not install here, so the graph is written with the `onnx` package: the same BERT
forward pass as tool-runtime's hand-written one, with Hugging Face's input and output names
(input_ids, attention_mask, token_type_ids -> last_hidden_state) so that ONNX Runtime and
fastembed read it as they read an export.

    python3 -m venv /tmp/onnxenv && /tmp/onnxenv/bin/pip install numpy onnx safetensors
    /tmp/onnxenv/bin/python export_onnx.py "$TOOLS_MINILM_DIR" model.onnx
"""

import json
import math
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file


def main(model_dir, out):
    w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(f"{model_dir}/model.safetensors").items()}
    cfg = json.load(open(f"{model_dir}/config.json"))
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = cfg.get("layer_norm_eps", 1e-12)

    nodes, inits = [], []
    counter = [0]

    def name(prefix):
        counter[0] += 1
        return f"{prefix}_{counter[0]}"

    def const(value, prefix="c"):
        n = name(prefix)
        inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def op(kind, inputs, **attrs):
        out_name = name(kind.lower())
        nodes.append(helper.make_node(kind, inputs, [out_name], **attrs))
        return out_name

    def weight(key, transpose=False):
        a = w[key]
        return const(np.ascontiguousarray(a.T) if transpose else a, key.replace(".", "_"))

    def linear(x, prefix):
        return op("Add", [op("MatMul", [x, weight(f"{prefix}.weight", True)]), weight(f"{prefix}.bias")])

    def norm(x, prefix):
        return op(
            "LayerNormalization",
            [x, weight(f"{prefix}.weight"), weight(f"{prefix}.bias")],
            axis=-1,
            epsilon=eps,
        )

    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    seq = op("Gather", [op("Shape", [ids]), const(np.int64(1))], axis=0)
    positions = op("Range", [const(np.int64(0)), seq, const(np.int64(1))])
    x = op("Gather", [weight("embeddings.word_embeddings.weight"), ids], axis=0)
    x = op("Add", [x, op("Gather", [weight("embeddings.position_embeddings.weight"), positions], axis=0)])
    x = op("Add", [x, op("Gather", [weight("embeddings.token_type_embeddings.weight"), types], axis=0)])
    x = norm(x, "embeddings.LayerNorm")

    # padding gets a large negative bias so softmax gives it no attention
    m = op("Cast", [mask], to=TensorProto.FLOAT)
    bias = op("Mul", [op("Sub", [const(np.float32(1.0)), m]), const(np.float32(-10000.0))])
    bias = op("Unsqueeze", [bias, const(np.array([1, 2], dtype=np.int64))])

    split_shape = const(np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = const(np.array([0, 0, hidden], dtype=np.int64))
    scale = const(np.float32(1.0 / math.sqrt(head_dim)))
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.self.query"), split_shape])], perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.self.key"), split_shape])], perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.self.value"), split_shape])], perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), bias])
        probs = op("Softmax", [scores], axis=-1)
        context = op("Reshape", [op("Transpose", [op("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        attended = norm(op("Add", [linear(context, f"{p}.attention.output.dense"), x]), f"{p}.attention.output.LayerNorm")
        h = linear(attended, f"{p}.intermediate.dense")
        # GELU with erf, in the form ONNX Runtime's GeluFusion recognises
        erf = op("Erf", [op("Div", [h, const(np.float32(math.sqrt(2.0)))])])
        h = op("Mul", [op("Mul", [h, op("Add", [erf, const(np.float32(1.0))])]), const(np.float32(0.5))])
        x = norm(op("Add", [linear(h, f"{p}.output.dense"), attended]), f"{p}.output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in (ids, mask, types)],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
