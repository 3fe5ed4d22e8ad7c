"""The public surface is closed: what ``routeproof`` exports is enough to use what it exports.

Modelled on httpx's ``tests/test_exported_members.py`` (``__all__`` is exactly the public namespace)
plus an API-closure check: every routeproof type that appears in the signature of an exported
function, method, property or class, or in the fields of an exported dataclass, is itself exported
from ``routeproof`` or a public sub-namespace (``routeproof.providers``, ``.stores``, ``.testing``,
``.config``, ``.traffic``, ``.content``). A user never has to
reach into ``routeproof.core.*`` to name a type the public API hands them or asks of them.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Iterator

import httpx
import pytest

import routeproof
import routeproof.config
import routeproof.content
import routeproof.providers
import routeproof.stores
import routeproof.testing
import routeproof.traffic
from routeproof.core.kernel import KernelState  # an internal type, for the planted leak

# routeproof.config: load_config returns its RoutingConfig (the validated agent.toml), and its values
PUBLIC_MODULES = (
    routeproof,
    routeproof.providers,
    routeproof.stores,
    routeproof.testing,
    routeproof.config,
    routeproof.traffic,
    routeproof.content,
)


def _exported(module: types.ModuleType) -> dict[str, object]:
    return {name: getattr(module, name) for name in module.__all__}


def _exported_objects() -> dict[int, str]:
    """id(object) -> the public name it is exported under (types, functions, aliases)."""
    found: dict[int, str] = {}
    for module in PUBLIC_MODULES:
        for name, obj in _exported(module).items():
            found.setdefault(id(obj), f"{module.__name__}.{name}")
    return found


@pytest.mark.parametrize("module", [routeproof, routeproof.providers, routeproof.stores], ids=lambda m: m.__name__)
def test_all_is_the_public_namespace(module: types.ModuleType) -> None:
    """Every public, non-module name of the package is in ``__all__`` and every ``__all__`` name exists."""
    public = {name for name in dir(module) if not name.startswith("_")}
    modules = {name for name in public if isinstance(getattr(module, name), types.ModuleType)}
    assert set(module.__all__) == public - modules - {"annotations"}  # the __future__ feature
    assert len(module.__all__) == len(set(module.__all__))


def _defined_in_testing(package: types.ModuleType) -> dict[str, object]:
    """Every public name (``name -> object``) the ``routeproof.testing`` package's modules declare in
    their ``__all__``; and each module declares every public class and function it defines."""
    defined: dict[str, object] = {}
    for info in pkgutil.iter_modules(package.__path__, prefix=f"{package.__name__}."):
        module = importlib.import_module(info.name)
        own = {
            name
            for name, obj in vars(module).items()
            if not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__
        }
        assert own <= set(module.__all__), f"{module.__name__} leaves {sorted(own - set(module.__all__))} out"
        defined.update({name: getattr(module, name) for name in module.__all__})
    return defined


def test_the_testing_module_exports_what_it_defines() -> None:
    """``routeproof.testing`` re-exports, as the same objects, every public name its modules
    (scripted, scenario, provider_check, wire) define, and every name in its ``__all__`` exists."""
    module = routeproof.testing
    defined = _defined_in_testing(module)
    assert {"ScriptedProvider", "check_provider", "Scenario", "wire_scenario"} <= set(defined)
    assert {name: getattr(module, name, None) for name in defined} == defined
    assert set(defined) <= set(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda m: m.__name__)
def test_exported_members_are_documented(module: types.ModuleType) -> None:
    """Every exported class and function says what it is (a docstring of its own)."""
    missing = [
        name
        for name, obj in _exported(module).items()
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip()
    ]
    assert missing == []


MADE_BY_ROUTEPROOF = frozenset({"routeproof.ProviderStream", "routeproof.router.ProviderStream"})
"""Exported classes a user receives but never constructs: ``Router.call_provider_streaming`` makes a
ProviderStream from the shell's ports (ports.py), so its constructor's parameters are not API."""


def _routeproof_types(annotation: object) -> Iterator[type]:
    """Every routeproof class mentioned in ``annotation``, through unions, generics and aliases; a
    TypedDict (``**kwargs: Unpack[...]``) is the keywords it names, so its fields' types are what count."""
    if typing.is_typeddict(annotation):
        for hint in typing.get_type_hints(annotation).values():
            yield from _routeproof_types(hint)
        return
    if isinstance(annotation, type) and annotation.__module__.split(".")[0] == "routeproof":
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _routeproof_types(arg)


def _public_namespace() -> dict[str, object]:
    namespace: dict[str, object] = {}
    for module in PUBLIC_MODULES:
        namespace.update(_exported(module))
    return namespace


def _hints(obj: object) -> dict[str, object]:
    """The evaluated annotations of ``obj``; names a module imports only under ``TYPE_CHECKING`` are
    looked up among the exported names (one that is not exported either is reported, not skipped)."""
    try:
        return typing.get_type_hints(obj, localns={"httpx": httpx, **_public_namespace()})  # httpx: TYPE_CHECKING
    except NameError as exc:
        return {"<unresolvable>": f"{getattr(obj, '__qualname__', obj)}: {exc}"}


def _signature_hints(name: str, obj: object) -> Iterator[tuple[str, object]]:
    """(where, annotation) for everything a user passes to or gets back from ``obj``."""
    if inspect.isfunction(obj):
        for param, hint in _hints(obj).items():
            yield f"{name}({param})", hint
        return
    if not inspect.isclass(obj) or issubclass(obj, enum.Enum | BaseException):
        return
    if dataclasses.is_dataclass(obj):
        for field in dataclasses.fields(obj):
            if not field.name.startswith("_"):
                yield f"{name}.{field.name}", _hints(obj)[field.name]
    for attr, member in vars(obj).items():
        if attr.startswith("_") and attr != "__init__":
            continue
        if attr == "__init__" and name in MADE_BY_ROUTEPROOF:
            continue
        if isinstance(member, property) and member.fget is not None:
            yield f"{name}.{attr}", _hints(member.fget).get("return")
        elif isinstance(member, staticmethod | classmethod):
            for param, hint in _hints(member.__func__).items():
                yield f"{name}.{attr}({param})", hint
        elif inspect.isfunction(member):
            for param, hint in _hints(member).items():
                yield f"{name}.{attr}({param})", hint


def unexported_types() -> list[str]:
    """``where: type`` for every routeproof type reachable from the public API but not exported."""
    exported = _exported_objects()
    missing: set[str] = set()
    for module in PUBLIC_MODULES:
        for name, obj in _exported(module).items():
            for where, hint in _signature_hints(f"{module.__name__}.{name}", obj):
                if isinstance(hint, str):  # an annotation that names something not importable
                    missing.add(f"{where}: {hint}")
                for found in _routeproof_types(hint):
                    if id(found) not in exported:
                        missing.add(f"{where}: {found.__module__}.{found.__qualname__}")
    return sorted(missing)


def test_every_type_in_a_public_signature_is_exported() -> None:
    """API closure: a type the public API takes or returns can be imported from the public API."""
    assert unexported_types() == []


def test_the_closure_check_sees_an_unexported_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check has teeth: a public function whose signature names an internal type is reported."""

    def planted(state: KernelState | None) -> list[KernelState]:
        """A public function leaking an internal type."""
        return [state] if state is not None else []

    monkeypatch.setattr(routeproof, "planted", planted, raising=False)
    monkeypatch.setattr(routeproof, "__all__", [*routeproof.__all__, "planted"])
    assert unexported_types() == [
        "routeproof.planted(return): routeproof.core.kernel.KernelState",
        "routeproof.planted(state): routeproof.core.kernel.KernelState",
    ]
