"""Tests of the code's shape: layers, import cycles, module and folder sizes, and the docs that must name the SPI and the kit."""
