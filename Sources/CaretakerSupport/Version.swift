public let caretakerVersion = "0.3.0"
