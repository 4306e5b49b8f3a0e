import CaretakerCore
print(caretakerVersion)
