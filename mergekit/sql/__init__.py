"""The SQL layer: the only package that imports sqlglot. Parses mergekit's dialect (Trino SQL plus merge-table
DDL and STREAM) into an immutable statement model, and renders expressions as Spark SQL with Trino semantics."""

from __future__ import annotations

from ._model import (
    AlterTableAddColumn,
    Call,
    ColumnDefinition,
    CreateSchema,
    CreateTable,
    Delete,
    Describe,
    DropTable,
    Explain,
    Expression,
    Insert,
    Merge,
    MergeAction,
    MergeCase,
    MergeCaseKind,
    QualifiedName,
    Query,
    Relation,
    ShowSchemas,
    ShowTables,
    Statement,
    TableRef,
    Truncate,
    Update,
)
from ._parse import parse_expression, parse_statement, split_statements
from ._render import spark_type_sql

__all__ = [
    "AlterTableAddColumn",
    "Call",
    "ColumnDefinition",
    "CreateSchema",
    "CreateTable",
    "Delete",
    "Describe",
    "DropTable",
    "Explain",
    "Expression",
    "Insert",
    "Merge",
    "MergeAction",
    "MergeCase",
    "MergeCaseKind",
    "QualifiedName",
    "Query",
    "Relation",
    "ShowSchemas",
    "ShowTables",
    "Statement",
    "TableRef",
    "Truncate",
    "Update",
    "parse_expression",
    "parse_statement",
    "spark_type_sql",
    "split_statements",
]
