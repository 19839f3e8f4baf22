"""Import of ONNX models."""

__all__: list[str] = []
