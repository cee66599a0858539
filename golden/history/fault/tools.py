from flowrt import bind


@bind("calc.divisor")
def divisor(n):
    return {"Ok": 0}
