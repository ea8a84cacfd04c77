print("sandbox")
