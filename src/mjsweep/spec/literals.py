"""Python literals read as data, for the values RL Zoo writes as Python text (policy_kwargs, normalize).

Parsed with ast, never evaluated: no code written in a spec runs.
"""

from __future__ import annotations

import ast
from typing import Any


def zoo_expression(text: str) -> Any:
    """RL Zoo writes some values as Python text: policy_kwargs "dict(ortho_init=False, activation_fn=nn.ReLU,
    net_arch=dict(pi=[64], vf=[64]))", normalize "{'norm_obs': True, 'norm_reward': False}". Read such text
    as data (no code runs): dict(...) calls, literals, lists, and names such as nn.ReLU as strings."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot read {text!r}: {exc.msg}") from None
    return _literal(tree, text)


def _literal(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value  # type: ignore[operator]  # a bad constant is the parser's to refuse
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item, text) for item in node.elts]
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        return {_literal(k, text): _literal(v, text)  # type: ignore[arg-type]
                for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: _literal(kw.value, text) for kw in node.keywords if kw.arg}
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ast.unparse(node)
    raise ValueError(f"cannot read {ast.unparse(node)!r} in {text!r}: only dict(...), literals and names")


def zoo_text(value: Any) -> Any:
    """A value RL Zoo may write as Python text (a mapping, dict(...)) read as data; any other as is."""
    return zoo_expression(value) if isinstance(value, str) and value.lstrip()[:1] in ("{", "d") else value
