// Part 4 of the fuzz suite (test/hardening/fuzz.ts deals the doors to four files).
import { fuzzDoors } from "./fuzz";

fuzzDoors(4, 4);
