#include "cost.h"
