"""A user's own schema (``--fields support.invoice_schema:Invoice``) with a number, a date, a
list and a nested model: what the evals must score by type, not by text."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, Field


class LineItem(BaseModel):
    sku: str
    quantity: int
    price: float


class Invoice(BaseModel):
    total: float | None = Field(None, description="The amount due, a number.")
    issued: date | None = Field(None, description="The invoice date, ISO 8601.")
    paid: bool | None = Field(None, description="Whether it is marked paid.")
    buyer: str | None = Field(None, description="Who is billed, as written.")
    items: list[LineItem] = Field(default_factory=list, description="The lines of the invoice.")
