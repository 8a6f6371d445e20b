"""Optuna storage for ``ablate tune``: URLs, masking, opening, and creating studies safely.

SQLite under the results directory by default (``sqlite:///<results>/optuna.db``; one file that
optuna-dashboard opens as it is); any SQLAlchemy RDB URL otherwise, e.g.
``postgresql+psycopg2://user:password@host/db`` for many workers (``pip install psycopg2-binary``).
A URL is only ever printed with its password masked. Several processes creating one fresh SQLite
schema or study at the same moment race ("table alembic_version already exists", UNIQUE
constraint): opening and creating are retried a few times on those errors only.
"""

from __future__ import annotations

import importlib.util
import random
import shlex
import time
import warnings
from pathlib import Path
from typing import Any

from harness.errors import AblateError
from harness.redact import mask_url

_RACE = ("already exists", "unique constraint", "duplicate key", "database is locked", "integrityerror")
ATTEMPTS = 8


def _password(url: str) -> str | None:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).password
    except Exception:  # noqa: BLE001
        return None


def default_storage(results: Path) -> str:
    """``sqlite:///<absolute results dir>/optuna.db``."""
    return f"sqlite:///{(Path(results) / 'optuna.db').resolve()}"


def sqlite_exists(url: str) -> bool:
    """False only for a SQLite URL whose database file does not exist (opening would create it)."""
    if not url.startswith("sqlite"):
        return True
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:  # noqa: BLE001 - unparsable (sqlite:x): open_storage says why
        return True
    return bool(database) and database != ":memory:" and Path(database).is_file()


def _reason(exc: BaseException, url: str) -> str:
    """The driver's own first line, with any password removed."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    secret = _password(url)
    return text.replace(secret, "***") if secret else text


def _is_race(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(marker in text for marker in _RACE)


def _engine_kwargs(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": 60}}
    if url.startswith("postgresql"):
        return {"connect_args": {"connect_timeout": 10}, "pool_pre_ping": True}
    return {"pool_pre_ping": True}


def open_storage(url: str, heartbeat: int | None = None) -> Any:
    """An ``optuna.storages.RDBStorage`` on ``url``; with ``heartbeat`` (seconds) each running
    trial sends heartbeats, and a trial silent for 3 x ``heartbeat`` is failed by the next worker.

    Raises:
        AblateError: an unparsable URL, a missing driver, an unreachable or unwritable database;
            the message names the URL with its password masked.
    """
    import optuna
    import sqlalchemy.exc

    if url.startswith("sqlite"):
        _make_parent(url)
    beat = {"heartbeat_interval": heartbeat, "grace_period": 3 * heartbeat} if heartbeat else {}
    for attempt in range(ATTEMPTS):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, engine_kwargs=_engine_kwargs(url), **beat)
        except ImportError as exc:  # optuna re-raises the driver's ModuleNotFoundError as ImportError
            driver = getattr(exc.__cause__, "name", None) or getattr(exc, "name", None) or "?"
            raise AblateError(missing_driver(url, driver)) from None
        except (sqlalchemy.exc.ArgumentError, ValueError) as exc:
            raise AblateError(
                f"{mask_url(url)} is not a database URL ({_reason(exc, url)}); e.g. "
                f"sqlite:///results/optuna.db or postgresql+psycopg2://user@host/db"
            ) from None
        except sqlalchemy.exc.SQLAlchemyError as exc:
            if attempt + 1 < ATTEMPTS and _is_race(exc):
                time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
                continue
            raise AblateError(f"cannot open the Optuna storage {mask_url(url)}: {_reason(exc, url)}") from None
    raise AssertionError("unreachable")


DRIVER_PACKAGES = {
    "psycopg2": "psycopg2-binary",
    "psycopg": "psycopg[binary]",
    "MySQLdb": "mysqlclient",
    "pymysql": "pymysql",
    "asyncpg": "asyncpg",
    "pg8000": "pg8000",
}
"""Python module of a SQLAlchemy database driver -> the package that installs it."""


def missing_driver(url: str, driver: str) -> str:
    """What to do when ``url``'s driver module ``driver`` is not installed. A bare
    ``postgresql://`` selects SQLAlchemy's default PostgreSQL driver (psycopg 3 in SQLAlchemy 2.1;
    psycopg2 before): where psycopg2 is installed, the fix is the URL, not a package."""
    scheme = url.split("://", 1)[0]
    if scheme == "postgresql" and driver != "psycopg2" and importlib.util.find_spec("psycopg2") is not None:
        fixed = "postgresql+psycopg2://" + url.split("://", 1)[1]
        return (
            f"the Optuna storage {mask_url(url)} selects the driver {driver!r}, which is not installed; psycopg2 "
            f"is: name it in the URL, --storage {mask_url(fixed)}"
        )

    package = DRIVER_PACKAGES.get(driver, driver)
    return (
        f"the Optuna storage {mask_url(url)} needs the database driver {driver!r}, which is not installed: "
        f"pip install {shlex.quote(package)}"
    )


def _make_parent(url: str) -> None:
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:  # noqa: BLE001 - reported by open_storage
        return
    if database and database != ":memory:":
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AblateError(f"cannot create the folder of {mask_url(url)}: {exc.strerror}") from None


def delete_hint(name: str, url: str) -> str:
    """What to do about a study that is in the way: a command that deletes it, as it can be run
    (the URL is only printed where it holds no password), or another storage."""
    where = shlex.quote(url) if not _password(url) else "URL (your --storage, with its password)"
    return (
        f"delete it (optuna delete-study --study-name {shlex.quote(name)} --storage {where}) or pass another --storage"
    )


def foreign_study(study: Any, name: str, url: str) -> str | None:
    """Why study ``name`` cannot be one that ``ablate tune`` made (several objectives), or None."""
    if len(study.directions) == 1:
        return None
    return (
        f"study {name!r} in {mask_url(url)} has {len(study.directions)} objectives "
        f"({', '.join(d.name.lower() for d in study.directions)}), so ablate tune did not make it "
        f"(its studies have one); {delete_hint(name, url)}"
    )


def ensure_study(
    storage: Any,
    name: str,
    direction: str,
    attrs: dict[str, Any],
    url: str = "",
    distributions: dict[str, Any] | None = None,
) -> None:
    """Create study ``name`` unless it exists (``load_if_exists``), retrying on the creation race;
    a new study gets ``attrs`` as user attributes (shown by optuna-dashboard).

    Args:
        url: the storage's URL, for messages (printed with its password masked).
        distributions: the Optuna distribution of each searched key; an existing study whose
            trials drew a key from an incompatible one (another kind, log scale or choices:
            every new trial would fail) is refused.

    Raises:
        AblateError: the study exists with several objectives, with the other direction or with
            incompatible parameter distributions, or creation kept failing.
    """
    import optuna
    import sqlalchemy.exc

    for attempt in range(ATTEMPTS):
        try:
            study = optuna.create_study(storage=storage, study_name=name, direction=direction, load_if_exists=True)
            break
        except (optuna.exceptions.DuplicatedStudyError, sqlalchemy.exc.SQLAlchemyError) as exc:
            if attempt + 1 == ATTEMPTS:
                raise AblateError(f"cannot create study {name!r}: {type(exc).__name__}: {exc}") from None
            time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
    check_study(study, name, direction, url, distributions)
    if not study.user_attrs:
        for key, value in attrs.items():
            study.set_user_attr(key, value)


def check_study(
    study: Any, name: str, direction: str, url: str = "", distributions: dict[str, Any] | None = None
) -> None:
    """An existing study ``name`` must be one this tune can top up (see :func:`ensure_study`).

    Raises:
        AblateError: several objectives, the other direction or incompatible distributions; the
            one-line message names the study and how to get it out of the way.
    """
    from optuna.distributions import check_distribution_compatibility

    if problem := foreign_study(study, name, url):
        raise AblateError(problem)
    if study.direction.name.lower() != direction:
        raise AblateError(
            f"study {name!r} exists and {study.direction.name.lower()}s, but the ablation's primary "
            f"metric asks to {direction}; {delete_hint(name, url)}"
        )
    for trial in study.get_trials(deepcopy=False):
        for key, stored in trial.distributions.items():
            if key not in (distributions or {}):
                continue
            try:
                check_distribution_compatibility(stored, distributions[key])
            except ValueError as exc:
                raise AblateError(
                    f"study {name!r} drew {key} from {_describe(stored)} (trial {trial.number}), but this tune searches "
                    f"{_describe(distributions[key])} ({str(exc).rstrip('.')}); {delete_hint(name, url)}"
                ) from None


def _describe(distribution: Any) -> str:
    """An Optuna distribution in words: ``float in [0.0003, 0.01] (log)``, ``one of [16, 32]``."""
    if hasattr(distribution, "choices"):
        return f"one of {list(distribution.choices)}"
    kind = "int" if type(distribution).__name__.startswith("Int") else "float"
    return f"{kind} in [{distribution.low:g}, {distribution.high:g}]{' (log)' if distribution.log else ''}"
