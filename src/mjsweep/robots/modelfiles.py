"""Every file a MuJoCo model reads (the XML, its includes, meshes, textures, height fields, skins),
the content hash over all of them, and the path rewrite that lets an edited model live elsewhere.

MuJoCo resolves an `<include file=...>` against the folder of the main XML (then against the folder
of the including file), and asset files against meshdir / texturedir, which are themselves relative
to that folder; MjSpec hands back absolute paths for assets an included file found next to itself.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from xml.sax.saxutils import unescape as xml_unescape


def model_files(xml: Path) -> list[Path]:
    """The XML first, then every existing file it includes or loads, each once, in a stable order.

    A file that does not parse contributes only itself: compiling it reports the error later.
    """
    xml = Path(xml).resolve()
    files = [xml, *_includes(xml, xml.parent, set())]
    try:
        import mujoco

        files += asset_files(mujoco.MjSpec.from_file(str(xml)), xml.parent)
    except ValueError:
        pass
    return list(dict.fromkeys(files))


def _includes(xml: Path, main_dir: Path, seen: set[Path]) -> list[Path]:
    """Files included by `xml`, depth first. MuJoCo looks for an include in the main XML's folder
    first, then in the folder of the file that includes it."""
    if xml in seen:
        return []
    seen.add(xml)
    names = _include_names(xml)
    if names is None:
        return []
    found: list[Path] = []
    for name in names:
        candidates = [(folder / name).resolve() for folder in (main_dir, xml.parent)]
        path = next((p for p in candidates if p.is_file()), None)
        if path is not None:
            found += [path, *_includes(path, main_dir, seen)]
    return found


_SKIPPED = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"), ("<!", ">"))
"""Comments, character data, processing instructions and declarations: no include hides in them."""
_MARKUP = re.compile(r"<(?:!|\?|include\b)")
"""Where a comment, a declaration or an include may start: other elements (and text, which holds no '<') are
passed over by the regex engine."""
_INCLUDE = re.compile(r"""<include\b((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_QUOTES = {"&quot;": '"', "&apos;": "'"}
_FILE = re.compile(r"""(?:^|\s)file\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _include_names(xml: Path) -> list[str] | None:
    """The file= of every <include> in `xml`, or None when it cannot be read or is cut short. One pass from
    markup to markup, each skipped to its end with str.find: linear in the file's size. (ElementTree feeds expat
    64 KB at a time, and so does pyexpat's Parse in 1 MB pieces; expat before 2.6 scans a token that spans those
    pieces again from its start at each one, so one long comment or attribute, as inline mesh or height field
    data make, made a model's read quadratic in its size: 61 MB, 27 s.)"""
    try:
        text = xml.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    names: list[str] = []
    markup = _MARKUP.search(text)
    while markup is not None:
        pos = markup.start()
        skipped = next(((opening, closing) for opening, closing in _SKIPPED if text.startswith(opening, pos)), None)
        if skipped is not None:
            end = text.find(skipped[1], pos + len(skipped[0]))
            if end == -1:
                return None
            pos = end + len(skipped[1])
        else:
            element = _INCLUDE.match(text, pos)
            if element is None:
                return None
            found = _FILE.search(element.group(1))
            if found and (name := xml_unescape(found.group(1) or found.group(2), _QUOTES)):
                names.append(name)
            pos = element.end()
        markup = _MARKUP.search(text, pos)
    return names


def asset_files(spec, model_dir: Path) -> list[Path]:
    """Existing files behind the spec's meshes, height fields, skins and textures."""
    mesh_dir = model_dir / (spec.meshdir or "")
    texture_dir = model_dir / (spec.texturedir or "")
    names = [(mesh_dir, m.file) for m in spec.meshes]
    names += [(mesh_dir, h.file) for h in spec.hfields]
    names += [(mesh_dir, s.file) for s in spec.skins]
    for texture in spec.textures:
        names += [(texture_dir, texture.file), *((texture_dir, f) for f in texture.cubefiles)]
    paths = [(folder / name).resolve() for folder, name in names if name]
    return [p for p in paths if p.is_file()]


def absolutize_asset_dirs(spec, model_dir: Path) -> None:
    """Point meshdir and texturedir at absolute folders, so the spec's XML compiles from anywhere."""
    spec.meshdir = str((model_dir / (spec.meshdir or "")).resolve()) + os.sep
    spec.texturedir = str((model_dir / (spec.texturedir or "")).resolve()) + os.sep


def model_sha256(xml: Path) -> str:
    """Content hash of a model. A model that reads no other file hashes as its XML's bytes alone."""
    files = model_files(xml)
    if len(files) == 1:
        return file_sha256(files[0])
    return combined_sha256(files[0].read_bytes(), files[1:], files[0].parent)


def loaded_sha256(xml: Path, planned: str) -> str:
    """The hash of the model's files as they are now, by the recipe `planned` was made with: a model file's
    (model_sha256), or an edited variant's, which hashes its XML's asset references, repeats included
    (edits.generate). A model that matches neither hashes as model_sha256 does."""
    found = model_sha256(xml)
    if found == planned:
        return found
    import mujoco

    xml = Path(xml)
    try:
        edited = combined_sha256(xml.read_bytes(), asset_files(mujoco.MjSpec.from_file(str(xml)), xml.parent),
                                 xml.parent)
    except ValueError:
        return found
    return edited if edited == planned else found


def combined_sha256(main: bytes, others: list[Path], model_dir: Path) -> str:
    """Hash of the main XML's bytes plus each other file's name (relative to the model) and content."""
    return hash_of_parts(main, [(os.path.relpath(path, model_dir), file_sha256(path)) for path in others])


def hash_of_parts(main: bytes, others: list[tuple[str, str]]) -> str:
    """combined_sha256 from the main XML's bytes and each other file's (name relative to the model, sha256)."""
    digest = hashlib.sha256(main)
    for name, sha256 in others:
        digest.update(f"\0{name}\0{sha256}".encode())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


_LINE = re.compile(r"(?:line|Line number=)\s*(\d+)")
_QUOTED = re.compile(r"'([^']+)'")


def error_location(xml: Path, message: str) -> str:
    """'FILE, line N' for MuJoCo's error message about `xml`: the line MuJoCo gives when it is in the
    main file; else the first line of the XML or one of its includes that holds a name the message
    quotes (MuJoCo reports line 0 for an error inside an included file); else just the main file."""
    xml = Path(xml).resolve()
    match = _LINE.search(message)
    if match and int(match.group(1)) > 0:
        return f"{xml}, line {match.group(1)}"
    first_line = message.strip().splitlines()[0] if message.strip() else ""
    names = [n for n in _QUOTED.findall(first_line) if n]
    for path in [xml, *_includes(xml, xml.parent, set())]:
        found = _line_naming(path, names)
        if found:
            return f"{path}, line {found}"
    return str(xml)


def _line_naming(path: Path, names: list[str]) -> int | None:
    """The first line of `path` with one of `names` as an attribute (name=) or a value ("name")."""
    if not names:
        return None
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, start=1):
        if any(re.search(rf'(\b{re.escape(n)}\s*=|["\']{re.escape(n)}["\'])', line) for n in names):
            return number
    return None
