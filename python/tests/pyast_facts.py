"""The verifier's facts from CPython's own `ast`: the reference for Tritium's C++ parser.

The C++ twin is cpp/src/pyast/facts.cc; docs/pyast.md defines the line format. Both must agree
on every file both accept.
"""

import ast


def render(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{render(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{render(node.func)}()"
    if isinstance(node, ast.Subscript):
        return f"{render(node.value)}[]"
    return f"<{type(node).__name__}>"


def _attribute_targets(target, out):
    if isinstance(target, ast.Attribute):
        out.append(f"attrassign\t{target.lineno}\t{render(target)}")
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _attribute_targets(elt, out)
    elif isinstance(target, ast.Starred):
        _attribute_targets(target.value, out)


def facts(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = ",".join(render(d) for d in node.decorator_list)
            out.append(f"def\t{node.lineno}\t{node.name}\t{int(isinstance(node, ast.AsyncFunctionDef))}\t{decorators}")
        elif isinstance(node, ast.ClassDef):
            bases = ",".join(render(b) for b in node.bases)
            decorators = ",".join(render(d) for d in node.decorator_list)
            out.append(f"class\t{node.lineno}\t{node.name}\t{bases}\t{decorators}")
        elif isinstance(node, ast.Call):
            out.append(f"call\t{node.lineno}\t{render(node.func)}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                out.append(f"import\t{node.lineno}\t{a.name}\t{a.asname or '-'}")
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                out.append(f"from\t{node.lineno}\t{node.level}\t{node.module or ''}\t{a.name}\t{a.asname or '-'}")
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                _attribute_targets(t, out)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            _attribute_targets(node.target, out)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            handlers = ",".join("*" if h.type is None else render(h.type) for h in node.handlers)
            star = int(type(node).__name__ == "TryStar")
            out.append(f"try\t{node.lineno}\t{star}\t{handlers}\t{int(bool(node.finalbody))}")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            contexts = ",".join(render(i.context_expr) for i in node.items)
            out.append(f"with\t{node.lineno}\t{int(isinstance(node, ast.AsyncWith))}\t{contexts}")
    return out
