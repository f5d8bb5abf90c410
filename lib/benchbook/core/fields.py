"""The checks of `values` as pydantic field types, for every schema that reads a file a user writes
(studies, MLPerf launch studies): `Line`, `Operand`, `Image`, `ContainerName`, `Host`, `EnvName`, `Count`."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, StrictInt

from . import values

Line = Annotated[str, AfterValidator(values.one_line)]
Operand = Annotated[str, AfterValidator(values.operand)]  # a repository, a path: never read as an option
Image = Annotated[str, AfterValidator(values.image)]
ContainerName = Annotated[str, AfterValidator(values.container_name)]
Host = Annotated[str, AfterValidator(values.host)]
EnvName = Annotated[str, AfterValidator(values.env_name)]
Count = StrictInt  # a count: 8, never true or "8"
