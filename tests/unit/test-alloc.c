#include "unit.h"
int main(void)
{
	UNIT_EXIT();
}
