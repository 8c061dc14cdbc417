"""Every file a MuJoCo model reads (the XML, its includes, meshes, textures, height fields, skins, and the
sub-models it attaches with all of theirs), the content hash over all of them, and the path rewrites that let a
model live elsewhere.

MuJoCo resolves an `<include file=...>` against the folder of the main XML (then against the folder
of the including file), and asset files against meshdir / texturedir, which are themselves relative
to that folder; MjSpec hands back absolute paths for assets an included file found next to itself.
A sub-model (`<asset><model file=...>`, attached with `<attach model=...>`) is found next to the XML file that
names it (the main one or an include; neither meshdir nor assetdir applies) and is read as a model of its own:
its includes, meshdir and assets resolve against its folder.

The file of a `<flexcomp type="mesh" | "gmsh" file=...>` is read while the XML is parsed, and MjSpec keeps no
record of it (its points and elements become a flex), so it is found from the XML text by MuJoCo's rule: in the main
XML a relative name lies below the mesh folder (meshdir, else assetdir); in an included file (wherever it lies), a
relative name that names no file in the main XML's folder is taken from the included file's own folder, and one that
does lies below the mesh folder, so that file in the main XML's folder decides where MuJoCo looks and is listed too;
with strippath, only the name's last part counts, below the mesh folder.

A path the XML gives as absolute is hashed, and stored in a sweep's snapshot, as the relative path to the
same file (`portable_xmls`): a copy of the model's files laid out as they lie then reads only its own files.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from xml.sax.saxutils import unescape as xml_unescape


def model_files(xml: Path, before_snapshots: bool = False) -> list[Path]:
    """The XML first, then every existing file it includes or loads, each once, in a stable order: its includes,
    its assets, its flexcomps' files, then each sub-model's files (with `before_snapshots`, the list before
    snapshots: neither sub-models' nor flexcomps' files).

    A file that does not parse contributes only itself: compiling it reports the error later.
    """
    return list(dict.fromkeys(_model_files(Path(xml).resolve(), None if before_snapshots else set())))


def _model_files(xml: Path, seen: set[Path] | None) -> list[Path]:
    """model_files with repeats; `seen` holds the models listed already, so that a sub-model attached twice, or a
    model that names itself, is read once (None: the list before snapshots, without sub-models and flexcomps)."""
    if seen is not None:
        if xml in seen:
            return []
        seen.add(xml)
    xmls = [xml, *_includes(xml, xml.parent, set())]
    files = list(xmls)
    try:
        import mujoco

        spec = mujoco.MjSpec.from_file(str(xml))
        files += asset_files(spec, xml.parent)
        files += _flexcomp_files(spec, xmls) if seen is not None else []
    except ValueError:
        pass
    for sub_model in _sub_models(xmls) if seen is not None else []:
        files += _model_files(sub_model, seen)
    return files


def _includes(xml: Path, main_dir: Path, seen: set[Path]) -> list[Path]:
    """Files included by `xml`, depth first. MuJoCo looks for an include in the main XML's folder
    first, then in the folder of the file that includes it."""
    if xml in seen:
        return []
    seen.add(xml)
    names = _file_names(xml)
    if names is None:
        return []
    found: list[Path] = []
    for name in names["include"]:
        candidates = [(folder / name).resolve() for folder in (main_dir, xml.parent)]
        path = next((p for p in candidates if p.is_file()), None)
        if path is not None:
            found += [path, *_includes(path, main_dir, seen)]
    return found


_SKIPPED = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"), ("<!", ">"))
"""Comments, character data, processing instructions and declarations: no include hides in them."""
_MARKUP = re.compile(r"<(?:!|\?|(?:include|model)\b)")
"""Where a comment, a declaration, an include or a sub-model may start: other elements (and text, which holds no
'<') are passed over by the regex engine."""
_INCLUDE = re.compile(r"""<(include|model)\b((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_PATH_MARKUP = re.compile(r"<(?:!|\?|(?:include|model|compiler|mesh|hfield|skin|texture|flexcomp)\b)")
_PATH_ELEMENT = re.compile(r"""<(include|model|compiler|mesh|hfield|skin|texture|flexcomp)\b"""
                           r"""((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_QUOTES = {"&quot;": '"', "&apos;": "'"}
_FILE = re.compile(r"""(?:^|\s)file\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _file_names(xml: Path) -> dict[str, list[str]] | None:
    """The file= of every <include> and every sub-model (<model>) in `xml`, by element, or None when it cannot be
    read or is cut short."""
    try:
        text = xml.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    elements = _elements(text, _MARKUP, _INCLUDE)
    if elements is None:
        return None
    names: dict[str, list[str]] = {"include": [], "model": []}
    for element in elements:
        found = _FILE.search(element.group(2))
        if found and (name := xml_unescape(found.group(1) or found.group(2), _QUOTES)):
            names[element.group(1)].append(name)
    return names


_FLEXCOMP_MARKUP = re.compile(r"<(?:!|\?|flexcomp\b)")
_FLEXCOMP = re.compile(r"""<(flexcomp)\b((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_TYPE = re.compile(r"""(?:^|\s)type\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _flexcomp_files(spec, xmls: list[Path]) -> list[Path]:
    """Existing files the flexcomps of these XML files (a model's main file first, then its includes) read: those of
    type mesh or gmsh, found as the module's docstring says."""
    model_dir = xmls[0].parent
    mesh_dir = model_dir / (spec.meshdir or "")
    found: list[Path] = []
    for xml in xmls:
        try:
            text = xml.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        for element in _elements(text, _FLEXCOMP_MARKUP, _FLEXCOMP) or []:
            kind, name = (_attribute(pattern, element.group(2)) for pattern in (_TYPE, _FILE))
            if kind not in ("mesh", "gmsh") or not name:
                continue
            if spec.strippath:
                found.append(mesh_dir / os.path.basename(name))
            elif xml == xmls[0]:
                found.append(mesh_dir / name)
            elif os.path.isabs(name):
                # its portable form is named from the mesh folder where that name names a file in the main XML's
                # folder (_flexcomp_folder): that file decides where MuJoCo looks, so a snapshot holds it too
                found += [Path(name), model_dir / os.path.relpath(Path(name).resolve(), mesh_dir.resolve())]
            elif (model_dir / name).exists():
                found += [mesh_dir / name, model_dir / name]  # the file in the main XML's folder decides, as above
            else:
                found.append(xml.parent / name)
    return [path for path in (p.resolve() for p in found) if path.is_file()]


def _attribute(pattern: re.Pattern[str], attributes: str) -> str | None:
    """The value of the attribute `pattern` finds in a start tag's attributes, unescaped, or None."""
    found = pattern.search(attributes)
    return xml_unescape(found.group(1) or found.group(2), _QUOTES) if found else None


def _sub_models(xmls: list[Path]) -> list[Path]:
    """The existing sub-model files that these XML files (a model's main file and its includes) name, each found
    next to the file that names it."""
    found: list[Path] = []
    for xml in xmls:
        names = _file_names(xml)
        found += [path for name in (names or {}).get("model", []) if (path := (xml.parent / name).resolve()).is_file()]
    return found


def _elements(text: str, markup: re.Pattern[str], element: re.Pattern[str]) -> list[re.Match[str]] | None:
    """Every start tag `element` matches, outside comments and declarations, or None when the text is cut short.
    One pass from markup to markup, each skipped to its end with str.find: linear in the text's size. (ElementTree
    feeds expat 64 KB at a time, and so does pyexpat's Parse in 1 MB pieces; expat before 2.6 scans a token that
    spans those pieces again from its start at each one, so one long comment or attribute, as inline mesh or
    height field data make, made a model's read quadratic in its size: 61 MB, 27 s.)"""
    found: list[re.Match[str]] = []
    at = markup.search(text)
    while at is not None:
        pos = at.start()
        skipped = next(((opening, closing) for opening, closing in _SKIPPED if text.startswith(opening, pos)), None)
        if skipped is not None:
            end = text.find(skipped[1], pos + len(skipped[0]))
            if end == -1:
                return None
            pos = end + len(skipped[1])
        else:
            tag = element.match(text, pos)
            if tag is None:
                return None
            found.append(tag)
            pos = tag.end()
        at = markup.search(text, pos)
    return found


_PATH_ATTRIBUTE = re.compile(r"""(\s)(file(?:right|left|up|down|front|back)?|meshdir|texturedir|assetdir)(\s*=\s*)"""
                             r"""(?:"([^"]*)"|'([^']*)')""")


def portable_xmls(xml: Path) -> dict[Path, bytes]:
    """The model's XML files (the main one, its includes and its sub-models' XML files) that give a path as
    absolute, each with those paths made relative to the folder MuJoCo resolves them against: includes and
    meshdir / texturedir / assetdir to the main XML's folder (a sub-model's to its own), a sub-model to the folder
    of the file that names it, mesh, height field and skin files to the mesh folder, texture files to the texture
    folder, a flexcomp's file to the mesh folder (in an include, to the folder MuJoCo looks in, _flexcomp_folder).
    The text is otherwise unchanged. A model MjSpec cannot read is left as it is (compiling it reports
    why)."""
    return _portable_xmls(Path(xml).resolve(), set())


def _portable_xmls(xml: Path, seen: set[Path]) -> dict[Path, bytes]:
    if xml in seen:
        return {}
    seen.add(xml)
    rewritten: dict[Path, bytes] = {}
    folders: tuple[Path, Path] | None = None
    xmls = [xml, *_includes(xml, xml.parent, set())]
    for sub_model in _sub_models(xmls):
        rewritten.update(_portable_xmls(sub_model, seen))
    for path in xmls:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        text = data.decode("utf-8", errors="surrogateescape")
        if not _gives_absolute_path(text):
            continue
        if folders is None:
            folders = _asset_folders(xml)
            if folders is None:
                return {}
        portable = portable_text(text, xml.parent, *folders, own_dir=path.parent, included=path != xml)
        if portable != text:
            rewritten[path] = portable.encode("utf-8", errors="surrogateescape")
    return rewritten


def portable_text(text: str, model_dir: Path, mesh_dir: Path, texture_dir: Path, own_dir: Path | None = None,
                  included: bool = False) -> str:
    """`text` with every absolute path of an include, a sub-model, a compiler folder, an asset file or a flexcomp's
    file made relative (see portable_xmls); the folders are absolute and resolved. `own_dir` is the folder of the
    file the text is from, where its sub-models are found (the model's folder where not given); `included`: the text
    is an included file's, whose flexcomps' files MuJoCo looks for as the module's docstring says."""
    elements = _elements(text, _PATH_MARKUP, _PATH_ELEMENT)
    if elements is None:
        return text
    base = {"include": model_dir, "model": own_dir or model_dir, "compiler": model_dir, "texture": texture_dir}
    pieces: list[str] = []
    done = 0
    for element in elements:
        name = element.group(1)
        folder: Path | Callable[[Path], Path] = base.get(name, mesh_dir)
        if name == "flexcomp" and included:
            folder = partial(_flexcomp_folder, model_dir=model_dir, mesh_dir=mesh_dir, own_dir=own_dir or model_dir)
        attributes = _PATH_ATTRIBUTE.sub(partial(_relative_attribute, element=name, folder=folder), element.group(2))
        pieces += [text[done:element.start(2)], attributes]
        done = element.end(2)
    return "".join([*pieces, text[done:]])


def _flexcomp_folder(path: Path, model_dir: Path, mesh_dir: Path, own_dir: Path) -> Path:
    """The folder a flexcomp's file in an included file is named relative to: the mesh folder where that name names
    a file in the main XML's folder too (MuJoCo then looks below the mesh folder; model_files lists that file),
    else the included file's own folder, where MuJoCo then looks."""
    return mesh_dir if (model_dir / os.path.relpath(path, mesh_dir)).exists() else own_dir


def _relative_attribute(attribute: re.Match[str], element: str, folder: Path | Callable[[Path], Path]) -> str:
    name = attribute.group(2)
    is_folder = name in ("meshdir", "texturedir", "assetdir")
    if is_folder != (element == "compiler") or (element in ("include", "model") and name != "file"):
        return attribute.group(0)
    quote = '"' if attribute.group(4) is not None else "'"
    value = xml_unescape(attribute.group(4) if attribute.group(4) is not None else attribute.group(5), _QUOTES)
    if not os.path.isabs(value):
        return attribute.group(0)
    path = Path(value).resolve()
    relative = os.path.relpath(path, folder if isinstance(folder, Path) else folder(path))
    if is_folder and value.endswith(("/", os.sep)):
        relative += "/"
    escaped = relative.replace("&", "&amp;").replace("<", "&lt;").replace(quote, "&quot;" if quote == '"' else "&apos;")
    return f"{attribute.group(1)}{name}{attribute.group(3)}{quote}{escaped}{quote}"


def _gives_absolute_path(text: str) -> bool:
    """Whether some path attribute of an include, the compiler or an asset starts at the filesystem's root: the
    test before MjSpec reads the model. Attributes are looked for only inside those start tags, each scanned once,
    so that a long comment or attribute elsewhere costs one pass."""
    elements = _elements(text, _PATH_MARKUP, _PATH_ELEMENT) or []
    return any(os.path.isabs(m.group(4) if m.group(4) is not None else m.group(5))
               for element in elements for m in _PATH_ATTRIBUTE.finditer(element.group(2)))


def _asset_folders(xml: Path) -> tuple[Path, Path] | None:
    """The resolved folders the model's mesh and texture files are found in, or None where MjSpec cannot read it."""
    import mujoco

    try:
        spec = mujoco.MjSpec.from_file(str(xml))
    except ValueError:
        return None
    return (xml.parent / (spec.meshdir or "")).resolve(), (xml.parent / (spec.texturedir or "")).resolve()


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


def absolutize_sub_model_assets(spec, xml: Path) -> None:
    """Give each asset a sub-model brought into `spec` (read from `xml`) its file as an absolute path: MjSpec finds
    it from the sub-model's folder, which the spec's XML (to_xml) does not say, so that XML would look for it in
    the main model's folders. A sub-model's assets keep its compiler (the main model's keep spec.compiler); each
    such group is placed in the one sub-model folder where all its files are found, and left as it is where none
    or several hold them."""
    folders = list(dict.fromkeys(path.parent for path in _all_sub_models(Path(xml).resolve(), set())))
    groups: dict[int, tuple[Any, list[tuple[Any, str]]]] = {}
    for assets, folder_of in ((spec.meshes, "meshdir"), (spec.hfields, "meshdir"), (spec.skins, "meshdir"),
                              (spec.textures, "texturedir")):
        for asset in assets:
            if asset.compiler is not spec.compiler and asset.file and not os.path.isabs(asset.file):
                groups.setdefault(id(asset.compiler), (asset.compiler, []))[1].append((asset, folder_of))
    for compiler, members in groups.values():
        homes = [folder for folder in folders
                 if all(_asset_path(folder, compiler, *member).is_file() for member in members)]
        if len(homes) == 1:
            for asset, folder_of in members:
                asset.file = str(_asset_path(homes[0], compiler, asset, folder_of))


def _asset_path(model_dir: Path, compiler: Any, asset: Any, folder_of: str) -> Path:
    """Where `asset` lies for a model in `model_dir`: below the compiler's meshdir or texturedir (`folder_of`)."""
    return (model_dir / (getattr(compiler, folder_of) or "") / asset.file).resolve()


def _all_sub_models(xml: Path, seen: set[Path]) -> list[Path]:
    """Every sub-model `xml` attaches, and theirs, each once."""
    found: list[Path] = []
    for sub_model in _sub_models([xml, *_includes(xml, xml.parent, set())]):
        if sub_model not in seen:
            seen.add(sub_model)
            found += [sub_model, *_all_sub_models(sub_model, seen)]
    return found


def absolutize_asset_dirs(spec, model_dir: Path) -> None:
    """Point meshdir and texturedir at absolute folders, so the spec's XML compiles from anywhere."""
    spec.meshdir = str((model_dir / (spec.meshdir or "")).resolve()) + os.sep
    spec.texturedir = str((model_dir / (spec.texturedir or "")).resolve()) + os.sep


def model_sha256(xml: Path, portable: bool = True) -> str:
    """Content hash of a model: its XML files as portable_xmls makes them, and every other file it reads. Without
    `portable`, by the recipe before snapshots: the XML files as they are, and no sub-model's or flexcomp's files.
    A model that reads no other file hashes as its XML's bytes alone."""
    files = model_files(xml, before_snapshots=not portable)
    rewritten = portable_xmls(files[0]) if portable else {}

    def sha256(path: Path) -> str:
        return hashlib.sha256(rewritten[path]).hexdigest() if path in rewritten else file_sha256(path)

    main = rewritten.get(files[0]) or files[0].read_bytes()
    if len(files) == 1:
        return hashlib.sha256(main).hexdigest()
    return hash_of_parts(main, [(os.path.relpath(path, files[0].parent), sha256(path)) for path in files[1:]])


def loaded_sha256(xml: Path, planned: str) -> str:
    """The hash of the model's files as they are now, by the recipe `planned` was made with: a model file's
    (model_sha256), or an edited variant's, which hashes its XML's asset references, repeats included
    (edits.generate). A model that matches neither hashes as model_sha256 does."""
    found = model_sha256(xml)
    if found == planned:
        return found
    if (as_is := model_sha256(xml, portable=False)) == planned:  # planned before snapshots
        return as_is
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
