"""`Record`: a read-only value class without `dataclasses`.

The session-start hook imports the modules that define its records (settings, session state,
search hits), and `dataclasses` pulls in `inspect`, `ast` and `dis`: ~6 ms of a ~40 ms hook.
A `Record` subclass names its fields in ``__slots__``, sets them once in ``__init__`` through
`Record._init`, and gets what ``@dataclass(frozen=True)`` would generate: equality, hash,
repr, copy/pickle support and `replace`. A subclass of a record names only the fields it
adds; ``__init__`` takes the base's fields first.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self


class Record:
    """Read-only fields named by ``__slots__`` (``__init__`` takes them in that order)."""

    __slots__: tuple[str, ...] = ()
    _field_names: ClassVar[tuple[str, ...]]  # set per class on first use

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        """Every field name, a base class's first."""
        names = cls.__dict__.get("_field_names")
        if names is None:
            names = tuple(n for c in reversed(cls.__mro__) for n in c.__dict__.get("__slots__", ()))
            cls._field_names = names
        return names

    def _init(self, **values: Any) -> None:
        """Set fields from ``__init__`` (plain assignment raises)."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"cannot assign to field {name!r} of a read-only {type(self).__name__}; use replace()"
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{self.__class__.__qualname__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle: __init__ takes the fields in order
        return (self.__class__, self._values())

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed."""
        values = dict(zip(self._fields(), self._values()))
        values.update(changes)
        return self.__class__(**values)
