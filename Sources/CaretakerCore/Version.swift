public let caretakerVersion = "0.1.0"
