public let caretakerVersion = "0.2.0"
