/* Stand-in for librdkafka's internal src/rdtime.h: rd.h already provides
 * rd_clock() and friends. */
#pragma once
