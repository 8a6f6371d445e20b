"""Optuna storage for ``ablate tune`` (docs/tuning.md: storage and many workers).

An RDB URL, by default ``sqlite:///<results>/optuna.db``, only ever printed with its password
masked. Processes creating one fresh SQLite schema or study at the same moment race ("table
alembic_version already exists", UNIQUE constraint): opening and creating are retried a few times on
those errors only.
"""

from __future__ import annotations

import importlib.util
import random
import re
import shlex
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import AblateError, first_line
from harness.redact import MASK, mask_url

_RACE = ("already exists", "unique constraint", "duplicate key", "database is locked", "integrityerror")
ATTEMPTS = 8
_SCHEMA = "compatible with the table schema"  # Optuna's RuntimeError on another version's tables
# a SQLAlchemy driver's module -> the package that installs it, where the names differ
DRIVER_PACKAGES = {"psycopg2": "psycopg2-binary", "psycopg": "psycopg[binary]", "MySQLdb": "mysqlclient"}


def _part(url: str, part: str) -> str | None:
    """A part of ``url`` (``password``, ``database`` unless ``:memory:``); None if it does not parse."""
    from sqlalchemy.engine import make_url

    try:
        value = getattr(make_url(url), part)
    except Exception:  # noqa: BLE001
        return None
    return value if value != ":memory:" else None


def default_storage(results: Path) -> str:
    """The storage URL when none is given: ``sqlite:///<results>/optuna.db``, its path made absolute."""
    return f"sqlite:///{(Path(results) / 'optuna.db').resolve()}"


def sqlite_exists(url: str) -> bool:
    """False only for a SQLite URL whose database file does not exist (opening would create it)."""
    if not url.startswith("sqlite") or _part(url, "drivername") is None:
        return True
    return bool(database := _part(url, "database")) and Path(database).is_file()


def _reason(exc: BaseException, url: str) -> str:
    """The driver's own first line, without the password."""
    text = first_line(getattr(exc, "orig", None) or exc)
    secret = _part(url, "password")
    return text.replace(secret, MASK) if secret else text


def _retry(call: Callable[[], Any]) -> Any:
    """``call()``, again (up to :data:`ATTEMPTS` times) while it raises a creation race."""
    for attempt in range(1, ATTEMPTS):
        try:
            return call()
        except Exception as exc:
            if not any(marker in f"{type(exc).__name__} {exc}".lower() for marker in _RACE):
                raise
            time.sleep(random.uniform(0.05, 0.2) * attempt)
    return call()


def open_storage(url: str, heartbeat: int | None = None) -> Any:
    """An ``optuna.storages.RDBStorage`` on ``url``.

    With ``heartbeat`` (seconds), a running trial silent for 3 x ``heartbeat`` is failed by the next
    worker.

    Raises:
        AblateError: an unparsable URL, a missing driver, an unreachable or unwritable database,
            tables set up by another Optuna version.
    """
    import optuna
    import sqlalchemy.exc

    if url.startswith("sqlite") and (database := _part(url, "database")):
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AblateError(f"cannot create the folder of {mask_url(url)}: {exc.strerror}") from None
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    if url.startswith("postgresql"):
        engine["connect_args"] = {"connect_timeout": 10}
    beat = {"heartbeat_interval": heartbeat, "grace_period": 3 * heartbeat} if heartbeat else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return _retry(lambda: optuna.storages.RDBStorage(url, engine_kwargs=engine, **beat))
    except ImportError as exc:  # optuna re-raises the driver's ModuleNotFoundError as ImportError
        driver = getattr(exc.__cause__, "name", None) or getattr(exc, "name", None) or "?"
        raise AblateError(missing_driver(url, driver)) from None
    except (sqlalchemy.exc.ArgumentError, ValueError) as exc:
        raise AblateError(
            f"{mask_url(url)} is not a database URL ({_reason(exc, url)}); e.g. sqlite:///results/optuna.db "
            "or postgresql+psycopg2://user@host/db"
        ) from None
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise AblateError(f"cannot open the Optuna storage {mask_url(url)}: {_reason(exc, url)}") from None
    except RuntimeError as exc:
        if _SCHEMA not in str(exc):
            raise
        raise AblateError(schema_mismatch(url, str(exc))) from None


def schema_mismatch(url: str, message: str) -> str:
    """What to do with a storage whose tables another Optuna version set up.

    Optuna's ``message`` says which, and whether ``optuna storage upgrade`` or a newer Optuna fixes it.
    """
    import optuna

    made = re.search(r"set up by optuna ([^)\s]+)", message)
    by = f"Optuna {made[1]}" if made else "another Optuna version"
    older = "optuna storage upgrade" in message
    fix = (
        f"upgrade it (optuna storage upgrade --storage {shlex.quote(mask_url(url))}; older Optunas can no "
        "longer read it)"
        if older
        else "install that Optuna (pip install optuna==VERSION) or a newer one"
    )
    return (
        f"the Optuna storage {mask_url(url)} was set up by {by}, which this Optuna ({optuna.__version__}) cannot read: "
        f"{fix}, or pass another --storage"
    )


def missing_driver(url: str, driver: str) -> str:
    """What to do when ``url``'s driver module ``driver`` is not installed.

    Where a bare ``postgresql://`` selects psycopg 3 (SQLAlchemy 2.1) but psycopg2 is installed, the
    URL that names psycopg2.
    """
    scheme, _, rest = url.partition("://")
    if scheme == "postgresql" and driver != "psycopg2" and importlib.util.find_spec("psycopg2") is not None:
        return (
            f"the Optuna storage {mask_url(url)} selects the driver {driver!r}, which is not installed; "
            f"psycopg2 is: name it in the URL, --storage {mask_url('postgresql+psycopg2://' + rest)}"
        )
    return (
        f"the Optuna storage {mask_url(url)} needs the database driver {driver!r}, which is not installed: "
        f"pip install {shlex.quote(DRIVER_PACKAGES.get(driver, driver))}"
    )


def delete_hint(name: str, url: str) -> str:
    """A command that deletes a study in the way (a URL with a password left out), or another storage."""
    where = shlex.quote(url) if not _part(url, "password") else "URL (your --storage, with its password)"
    return (
        f"delete it (optuna delete-study --study-name {shlex.quote(name)} --storage {where}) or pass another --storage"
    )


def check_one_objective(study: Any, name: str, url: str) -> None:
    """Raise :class:`AblateError` when study ``name`` has several objectives: ``ablate tune`` did not make it."""
    if len(study.directions) > 1:
        raise AblateError(
            f"study {name!r} in {mask_url(url)} has {len(study.directions)} objectives "
            f"({', '.join(d.name.lower() for d in study.directions)}), so ablate tune did not make it "
            f"(its studies have one); {delete_hint(name, url)}"
        )


def ensure_study(
    storage: Any, name: str, direction: str, attrs: dict[str, Any], url: str, distributions: dict[str, Any]
) -> None:
    """Create study ``name`` unless it exists, and check it.

    The check is :func:`check_study`'s; a new study gets ``attrs`` as user attributes.

    Raises:
        AblateError: the study cannot be created, or :func:`check_study` refuses it.
    """
    import optuna
    import sqlalchemy.exc

    try:
        study = _retry(
            lambda: optuna.create_study(storage=storage, study_name=name, direction=direction, load_if_exists=True)
        )
    except (optuna.exceptions.DuplicatedStudyError, sqlalchemy.exc.SQLAlchemyError) as exc:
        raise AblateError(f"cannot create study {name!r}: {type(exc).__name__}: {exc}") from None
    check_study(study, name, direction, url, distributions)
    if not study.user_attrs:
        for key, value in attrs.items():
            study.set_user_attr(key, value)


def check_study(study: Any, name: str, direction: str, url: str, distributions: dict[str, Any]) -> None:
    """Refuse study ``name`` unless its objective, direction and trials fit this tune.

    Raises:
        AblateError: one line naming the study and how to get it out of the way, unless study
            ``name`` has one objective, ``direction``, and trials that drew each searched key from a
            distribution compatible with ``distributions`` (else every new trial would fail).
    """
    from optuna.distributions import check_distribution_compatibility

    check_one_objective(study, name, url)
    if study.direction.name.lower() != direction:
        raise AblateError(
            f"study {name!r} exists and {study.direction.name.lower()}s, but the ablation's primary metric "
            f"asks to {direction}; {delete_hint(name, url)}"
        )
    for trial in study.get_trials(deepcopy=False):
        for key, stored in ((k, d) for k, d in trial.distributions.items() if k in distributions):
            try:
                check_distribution_compatibility(stored, distributions[key])
            except ValueError as exc:
                raise AblateError(
                    f"study {name!r} drew {key} from {_describe(stored)} (trial {trial.number}), but this "
                    f"tune searches {_describe(distributions[key])} ({str(exc).rstrip('.')}); "
                    f"{delete_hint(name, url)}"
                ) from None


def _describe(distribution: Any) -> str:
    """An Optuna distribution in words: ``float in [0.0003, 0.01] (log)``, ``one of [16, 32]``."""
    if hasattr(distribution, "choices"):
        return f"one of {list(distribution.choices)}"
    kind = "int" if type(distribution).__name__.startswith("Int") else "float"
    return f"{kind} in [{distribution.low:g}, {distribution.high:g}]{' (log)' if distribution.log else ''}"
