func.func @f() {
  return
}
ÿþ
