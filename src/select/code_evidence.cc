#include "select/code_evidence.h"
