"""Invoices: line items, tax rates and plain-text rendering."""
